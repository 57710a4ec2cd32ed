package node

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	keyfiles "github.com/healthtech/partner-open-platform/internal/datakeys/files"
	keyspg "github.com/healthtech/partner-open-platform/internal/datakeys/postgres"
	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/privacy"
	"github.com/healthtech/partner-open-platform/relay/feed"
)

// dataKeys is how the node seals and opens what the log must not hold in
// clear: the master key's sealer (app secrets), the per-person data keys,
// the pseudonyms of channel users, and the log as commands and read models
// read it, personal fields decrypted.
type dataKeys struct {
	sealer         *secrets.Sealer
	keys           *datakeys.Keys
	pseudonyms     *domain.Pseudonyms
	legacyBindings bool
	// erasedFrom is the log's head before this node opened any person's
	// key: the erasure follower starts there.
	erasedFrom events.Position
	events     events.Store
	adapter    string
	// files is the key store in the data directory (nil: Postgres).
	files   *keyfiles.Store
	closers []func() error
}

// buildDataKeys opens the master key (checked against the log) and the key
// store: Postgres beside Postgres read models, files in the data directory
// otherwise.
func buildDataKeys(ctx context.Context, cfg Config, stored *headStore, reg *events.Registry, log *slog.Logger) (dataKeys, error) {
	var dk dataKeys
	var err error
	if dk.sealer, err = openSealer(ctx, cfg, stored, reg, log); err != nil {
		return dk, err
	}
	var backend datakeys.Backend
	if cfg.PostgresURL != "" {
		backend, err = keyspg.Open(ctx, cfg.PostgresURL)
		dk.adapter = "Postgres"
	} else {
		// Its index is built while the node opens, the snapshot's restore
		// included (Open waits for it before anything runs).
		dir := filepath.Join(cfg.DataDir, "keys")
		backend, err = keyfiles.Opening(dir)
		dk.adapter = "files in " + dir
	}
	if err != nil {
		return dk, fmt.Errorf("personal-data keys: %w", err)
	}
	dk.closers = append(dk.closers, backend.Close)
	dk.files, _ = backend.(*keyfiles.Store)
	dk.keys = datakeys.New(backend, dk.sealer, dk.sealer.Previous()...)
	dk.keys.SetClock(cfg.Now)
	if dk.legacyBindings, err = legacyBindings(ctx, dk.keys, stored); err != nil {
		return dk, err
	}
	if dk.pseudonyms, err = OpenPseudonyms(ctx, dk.keys); err != nil {
		return dk, err
	}
	if dk.erasedFrom, err = stored.Head(ctx); err != nil {
		return dk, fmt.Errorf("event store: head of the log: %w", err)
	}
	dk.events = stored
	if cfg.PlaintextPersonalData {
		dk.adapter += " (encryption OFF: PlaintextPersonalData)"
	} else {
		dk.events = privacy.New(stored, dk.keys)
	}
	return dk, nil
}

// PseudonymSecret is the key-store subject of the platform secret that
// binding stream names (and the Kafka keys made from them) are hashed
// under: not a person, never destroyed by an erasure.
const PseudonymSecret = "platform.pseudonyms"

// LegacyBindingsFlag is the key-store subject whose presence says that the
// log may hold channel-user bindings named after the channel_user_id (it
// had users when the first node of a release with hashed names opened it),
// which registers must then keep reading. It is a record like any other
// (its random bytes unused) so that it lives where the pseudonym secret
// does and the event log is left as it is.
const LegacyBindingsFlag = "platform.legacy-bindings"

// legacyBindings decides, once per log, whether registers must read the
// legacy binding names: on the first start of this release (no pseudonym
// secret yet, created right after), legacy bindings may exist if the log
// had allocated user ids (every binding names one), and the flag is
// recorded before the secret; later starts read the flag. Two first starts
// at once agree (both read the same log: nothing registers before a node
// has created the secret); a log begun with hashed names never reads a
// legacy name.
func legacyBindings(ctx context.Context, ks *datakeys.Keys, store events.Store) (bool, error) {
	_, err := ks.Backend().Get(ctx, PseudonymSecret)
	if err == nil {
		_, err := ks.Backend().Get(ctx, LegacyBindingsFlag)
		if errors.Is(err, datakeys.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("legacy bindings flag: %w", err)
		}
		return true, nil
	}
	if !errors.Is(err, datakeys.ErrNotFound) {
		return false, fmt.Errorf("channel user pseudonym key: %w", err)
	}
	recs, err := store.ReadStream(ctx, domain.IDStream(commands.KindUser), 0, 1)
	if err != nil {
		return false, fmt.Errorf("legacy bindings: %w", err)
	}
	if len(recs) == 0 {
		return false, nil
	}
	if _, err := ks.PlatformSecret(ctx, LegacyBindingsFlag); err != nil {
		return false, fmt.Errorf("legacy bindings flag: %w", err)
	}
	return true, nil
}

// DecisionMailsFromStartFlag is the key-store subject whose presence says
// that the log was empty when the first node that mails review decisions
// from their events opened it, so that every decision in it is mailed from
// its event (portal.DecisionMails.Begin). Like LegacyBindingsFlag, a
// record beside the pseudonym secret, so that a start appends nothing to
// the log.
const DecisionMailsFromStartFlag = "platform.decision-mails-from-start"

// decisionMailsFromStart decides, once per log, whether review decisions
// are mailed from the log's start: yes when the flag is there, or when the
// log is empty (the flag is then recorded); no for a log that already held
// events, whose earlier decisions the edges mailed.
func decisionMailsFromStart(ctx context.Context, ks *datakeys.Keys, store events.Store) (bool, error) {
	_, err := ks.Backend().Get(ctx, DecisionMailsFromStartFlag)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, datakeys.ErrNotFound) {
		return false, fmt.Errorf("decision mails flag: %w", err)
	}
	head, err := store.Head(ctx)
	if err != nil {
		return false, fmt.Errorf("decision mails: %w", err)
	}
	if !head.IsZero() {
		return false, nil
	}
	if _, err := ks.PlatformSecret(ctx, DecisionMailsFromStartFlag); err != nil {
		return false, fmt.Errorf("decision mails flag: %w", err)
	}
	return true, nil
}

// OpenPseudonyms builds the hasher of channel user ids. Its key lives in the
// key store rather than being derived from the master key: the key store is
// what every node shares (Postgres) or the data directory keeps (files), it
// survives restarts, and a master-key rotation re-seals the secret without
// changing it, whereas a key derived from the master key would rename every
// binding stream at rotation and so break register's uniqueness. The key
// is derived from the secret with a fixed label, so the secret serves no
// other purpose directly.
func OpenPseudonyms(ctx context.Context, ks *datakeys.Keys) (*domain.Pseudonyms, error) {
	secret, err := ks.PlatformSecret(ctx, PseudonymSecret)
	if err != nil {
		return nil, fmt.Errorf("channel user pseudonym key: %w", err)
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("partner-open-platform channel_user_id binding stream v1"))
	return domain.NewPseudonyms(m.Sum(nil))
}

// feedPseudonymKey is the configured feed key, or one derived from the
// master key (which every node sharing the log has), so relays on any node
// make the same pseudonyms. openSealer has already checked the master key.
func feedPseudonymKey(cfg Config) ([]byte, error) {
	if cfg.FeedPseudonymKey != "" {
		key, err := secrets.ParseKey(cfg.FeedPseudonymKey)
		if err != nil {
			return nil, fmt.Errorf("PLATFORM_FEED_PSEUDONYM_KEY: %w", err)
		}
		return key, nil
	}
	var master []byte
	var err error
	if cfg.MasterKey != "" {
		master, err = secrets.ParseKey(cfg.MasterKey)
	} else {
		master, _, err = secrets.LoadOrCreateKeyFile(filepath.Join(cfg.DataDir, "master.key"))
	}
	if err != nil {
		return nil, fmt.Errorf("analytics feed pseudonym key from the master key: %w", err)
	}
	return feed.DeriveKey(master), nil
}

// openSealer returns the sealer of the master key: PLATFORM_MASTER_KEY, or
// the key file in the data directory, created only while the event log is
// empty. A log that already holds events was sealed with some key, and a new
// one could never open it, so a missing key is refused; so is a key that
// cannot open the first sealed secret in the log.
func openSealer(ctx context.Context, cfg Config, store events.Store, reg *events.Registry, log *slog.Logger) (*secrets.Sealer, error) {
	key, source, err := masterKey(ctx, cfg, store, log)
	if err != nil {
		return nil, err
	}
	sealer, err := secrets.New(key)
	if err != nil {
		return nil, err
	}
	older, err := previousSealers(cfg)
	if err != nil {
		return nil, err
	}
	sealer = secrets.WithPrevious(sealer, older...)
	if len(older) > 0 {
		log.Info("master key: sealing with the current key, also opening with previous keys",
			"current", sealer.KeyID(), "previous", strings.Join(sealer.PreviousKeyIDs(), ","))
	}
	if err := checkSealer(ctx, sealer, store, reg); err != nil {
		fix := "set PLATFORM_MASTER_KEY to the key this log was written with (after a rotation, keep the old key in PLATFORM_MASTER_KEY_PREVIOUS)"
		if cfg.MasterKey == "" {
			fix = "set PLATFORM_MASTER_KEY, or put in " + source + ", the key this log was written with (after a rotation, keep the old key in PLATFORM_MASTER_KEY_PREVIOUS or " + filepath.Join(cfg.DataDir, "master.key.previous") + ")"
		}
		return nil, fmt.Errorf("master key from %s: %w; %s", source, err, fix)
	}
	return sealer, nil
}

// masterKey reads the master key and says where from: PLATFORM_MASTER_KEY,
// else the data directory's key file, made only for an empty log.
func masterKey(ctx context.Context, cfg Config, store events.Store, log *slog.Logger) (key []byte, source string, err error) {
	if cfg.MasterKey != "" {
		if key, err = secrets.ParseKey(cfg.MasterKey); err != nil {
			return nil, "", fmt.Errorf("PLATFORM_MASTER_KEY: %w", err)
		}
		return key, "PLATFORM_MASTER_KEY", nil
	}
	path := filepath.Join(cfg.DataDir, "master.key")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		recs, err := store.ReadAll(ctx, events.Position{}, 1)
		if err != nil {
			return nil, "", fmt.Errorf("master key: read the event log: %w", err)
		}
		if len(recs) > 0 {
			return nil, "", fmt.Errorf("master key: PLATFORM_MASTER_KEY is unset and %s does not exist, but the event log already holds events, "+
				"and the secrets in them were sealed with a master key; set PLATFORM_MASTER_KEY (or restore %s) to the key this log was written with. "+
				"Refusing to create a new key, which could not open them", path, path)
		}
	}
	key, created, err := secrets.LoadOrCreateKeyFile(path)
	if err != nil {
		return nil, "", err
	}
	if created {
		log.Info("created master key for sealing secrets", "path", path)
	}
	if cfg.EventStoreURL != "" {
		log.Warn("PLATFORM_MASTER_KEY is unset: secrets are sealed with a key kept in the data directory; every node sharing the event store needs the same key", "path", path)
	}
	return key, path, nil
}

// previousSealers open with the master keys of before a rotation:
// PLATFORM_MASTER_KEY_PREVIOUS, else the data directory's
// master.key.previous (one key a line) if it exists.
func previousSealers(cfg Config) ([]*secrets.Sealer, error) {
	var previous [][]byte
	var err error
	if cfg.MasterKeyPrevious != "" {
		if previous, err = secrets.ParseKeyList(cfg.MasterKeyPrevious); err != nil {
			return nil, fmt.Errorf("PLATFORM_MASTER_KEY_PREVIOUS: %w", err)
		}
	} else if previous, err = secrets.LoadKeyListFile(filepath.Join(cfg.DataDir, "master.key.previous")); err != nil {
		return nil, err
	}
	older := make([]*secrets.Sealer, 0, len(previous))
	for _, k := range previous {
		s, err := secrets.New(k)
		if err != nil {
			return nil, err
		}
		older = append(older, s)
	}
	return older, nil
}

// checkSealer opens the first sealed secret in the log, looking no further
// than its first 10,000 events (no partner can write before an app exists,
// so the first app comes early), so that a wrong key fails here rather than
// in the apps projection, forever.
func checkSealer(ctx context.Context, sealer *secrets.Sealer, store events.Store, reg *events.Registry) error {
	created, rotated := catalog.AppCreated{}.EventType(), catalog.AppSecretRotated{}.EventType()
	var pos events.Position
	for scanned := 0; scanned < 10000; {
		recs, err := store.ReadAll(ctx, pos, 500)
		if err != nil {
			return fmt.Errorf("read the event log: %w", err)
		}
		for _, rec := range recs {
			if rec.Type != created && rec.Type != rotated {
				continue
			}
			env, err := reg.Decode(rec)
			if err != nil {
				return fmt.Errorf("decode %s at %s: %w", rec.Type, rec.Position, err)
			}
			var appID int64
			var sealed string
			switch p := env.Payload.(type) {
			case *catalog.AppCreated:
				appID, sealed = p.AppID, p.SealedAppSecret
			case *catalog.AppSecretRotated:
				appID, sealed = p.AppID, p.SealedAppSecret
			default:
				continue
			}
			if _, err := sealer.Open(sealed); err != nil {
				return fmt.Errorf("it cannot open the secret of app %d sealed in the event log at %s: %w", appID, rec.Position, err)
			}
			return nil
		}
		if len(recs) < 500 {
			return nil
		}
		scanned += len(recs)
		pos = recs[len(recs)-1].Position
	}
	return nil
}

// masterDerived derives a purpose-bound key from the master key, which
// every node sharing the stores has, so they all derive the same key.
func masterDerived(cfg Config, purpose string) ([]byte, error) {
	var master []byte
	var err error
	if cfg.MasterKey != "" {
		master, err = secrets.ParseKey(cfg.MasterKey)
	} else {
		master, _, err = secrets.LoadOrCreateKeyFile(filepath.Join(cfg.DataDir, "master.key"))
	}
	if err != nil {
		return nil, fmt.Errorf("%s from the master key: %w", purpose, err)
	}
	m := hmac.New(sha256.New, master)
	m.Write([]byte("partner-open-platform " + purpose))
	return m.Sum(nil), nil
}

// tokenFile returns the configured token, or the one kept in path (created
// with mode 0600 on first start).
func tokenFile(configured, path, prefix string, log *slog.Logger) (string, error) {
	if configured != "" {
		return configured, nil
	}
	if b, err := os.ReadFile(path); err == nil {
		if tok := strings.TrimSpace(string(b)); tok != "" {
			log.Info("token read from file", "path", path)
			return tok, nil
		}
	}
	tok := secrets.Random(prefix, 24)
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write token %s: %w", path, err)
	}
	log.Info("token created", "path", path)
	return tok, nil
}
