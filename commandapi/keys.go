package commandapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// KeyResealer re-seals the personal-data keys with the current master key
// (datakeys.Keys implements it).
type KeyResealer interface {
	Reseal(ctx context.Context) (int, error)
	MasterKeyID() string
}

func (a *API) keyRoutes() []Route {
	return []Route{
		{Method: "POST", Path: "/admin/v1/keys/rotate", Handle: a.admin(a.rotateKeys)},
	}
}

// rotateKeys finishes a master-key rotation: the node already seals with
// the new key (PLATFORM_MASTER_KEY) and opens with the old ones
// (PLATFORM_MASTER_KEY_PREVIOUS); this re-seals every data key still sealed
// by an old key. Events are untouched: the app secrets sealed in them keep
// needing the old key as a previous key.
func (a *API) rotateKeys(c *call) error {
	if a.Keys == nil {
		return errors.New("commandapi: no key store")
	}
	n, err := a.Keys.Reseal(c.r.Context())
	if err != nil {
		return err
	}
	httpapi.OK(c.w, http.StatusOK, map[string]any{"master_key_id": a.Keys.MasterKeyID(), "resealed": n})
	return nil
}
