package pgmigrate

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The migration policy (docs/upgrades.md): during a rolling upgrade nodes
// of the previous release run on the schema this release's migrations
// leave, so a migration only expands it. A step that would break an older
// node (dropping or renaming a table or column, changing a column's type,
// making a column NOT NULL, adding a NOT NULL column without a default)
// is a contract step: it ships in a later release than the one that stopped
// using what it removes, and says so in a comment line starting with
// "-- contract:" that names that release.

// contractPatterns find the statements of a contract step.
var contractPatterns = []struct {
	what string
	re   *regexp.Regexp
}{
	{"drops a table, column, view, type, schema or function", regexp.MustCompile(`(?i)\bDROP\s+(TABLE|COLUMN|VIEW|MATERIALIZED\s+VIEW|TYPE|SCHEMA|FUNCTION)\b`)},
	{"drops a column", regexp.MustCompile(`(?i)\bALTER\s+TABLE\b[^;]*\bDROP\s+(IF\s+EXISTS\s+)?[a-z_"][a-z0-9_"]*\s*(,|;|$|CASCADE|RESTRICT)`)},
	{"renames", regexp.MustCompile(`(?i)\bRENAME\b`)},
	{"changes a column's type", regexp.MustCompile(`(?i)\bALTER\s+(COLUMN\s+)?[a-z_"][a-z0-9_"]*\s+(SET\s+DATA\s+)?TYPE\b`)},
	{"makes a column NOT NULL", regexp.MustCompile(`(?i)\bSET\s+NOT\s+NULL\b`)},
}

// addColumn finds each ADD COLUMN clause up to the next comma or semicolon
// (a type with a comma, numeric(10,2), ends the clause early: the check
// then errs on the side of passing).
var addColumn = regexp.MustCompile(`(?is)\bADD\s+(COLUMN\s+)?(IF\s+NOT\s+EXISTS\s+)?[a-z_"][a-z0-9_"]*\s+[^,;]*`)

var (
	notNull   = regexp.MustCompile(`(?i)\bNOT\s+NULL\b`)
	hasDflt   = regexp.MustCompile(`(?i)\bDEFAULT\b`)
	isConstr  = regexp.MustCompile(`(?i)^ADD\s+(CONSTRAINT|PRIMARY|UNIQUE|CHECK|FOREIGN)\b`)
	marker    = regexp.MustCompile(`(?m)^\s*--\s*contract:\s*\S`)
	lineNotes = regexp.MustCompile(`--[^\n]*`)
)

// contractSteps returns what makes sql a contract step (nothing for an
// expand-only migration). Comments are ignored.
func contractSteps(sql string) []string {
	code := lineNotes.ReplaceAllString(sql, "")
	var found []string
	for _, p := range contractPatterns {
		if m := p.re.FindString(code); m != "" {
			found = append(found, p.what+": "+strings.Join(strings.Fields(m), " "))
		}
	}
	for _, clause := range addColumn.FindAllString(code, -1) {
		if isConstr.MatchString(clause) {
			continue
		}
		if notNull.MatchString(clause) && !hasDflt.MatchString(clause) {
			found = append(found, "adds a NOT NULL column without a default: "+strings.Join(strings.Fields(clause), " "))
		}
	}
	return found
}

func TestContractStepsAreFound(t *testing.T) {
	expand := []string{
		"CREATE TABLE t (id bigint PRIMARY KEY, name text NOT NULL);",
		"ALTER TABLE webhook_deliveries ADD COLUMN subject text NOT NULL DEFAULT '';",
		"ALTER TABLE a ADD COLUMN b text, ADD COLUMN c timestamptz;",
		"CREATE INDEX IF NOT EXISTS i ON t (a); ALTER TABLE t ADD CONSTRAINT u UNIQUE (a);",
		"-- a comment may say DROP TABLE or RENAME\nCREATE TABLE x (a int);",
		"INSERT INTO erasure_purge (id) VALUES (1);",
	}
	for _, sql := range expand {
		if got := contractSteps(sql); len(got) > 0 {
			t.Errorf("expand-only migration taken for a contract step (%v):\n%s", got, sql)
		}
	}
	contract := []string{
		"DROP TABLE old_things;",
		"ALTER TABLE t DROP COLUMN name;",
		"ALTER TABLE t DROP name;",
		"ALTER TABLE t RENAME COLUMN a TO b;",
		"ALTER TABLE t RENAME TO u;",
		"ALTER TABLE t ALTER COLUMN a TYPE bigint;",
		"ALTER TABLE t ALTER a SET DATA TYPE bigint;",
		"ALTER TABLE t ALTER COLUMN a SET NOT NULL;",
		"ALTER TABLE t ADD COLUMN a text NOT NULL;",
		"drop view v;",
	}
	for _, sql := range contract {
		if got := contractSteps(sql); len(got) == 0 {
			t.Errorf("contract step not found in:\n%s", sql)
		}
	}
}

// repoRoot is the module's root (the directory holding go.mod).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// migrationFiles lists every store's migrations (<pkg>/migrations/<part>/NNNN_x.sql),
// relative to root.
func migrationFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, path)
		if !d.IsDir() && isMigration(filepath.ToSlash(rel)) {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func isMigration(rel string) bool {
	parts := strings.Split(rel, "/")
	return len(parts) >= 3 && parts[len(parts)-3] == "migrations" && strings.HasSuffix(rel, ".sql")
}

// TestMigrationsExpandOnly enforces the policy on every store's migrations:
// a contract step must be marked as one.
func TestMigrationsExpandOnly(t *testing.T) {
	root := repoRoot(t)
	files := migrationFiles(t, root)
	if len(files) < 10 {
		t.Fatalf("found only %d migration files under %s: the walk is wrong", len(files), root)
	}
	for _, rel := range files {
		raw, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		if steps := contractSteps(string(raw)); len(steps) > 0 && !marker.Match(raw) {
			t.Errorf("%s is a contract step, which a node of the previous release may not survive during a rolling upgrade:\n  %s\n"+
				"expand instead (add, backfill, keep the old shape), and contract in a later release with a line "+
				"\"-- contract: safe once every node runs <release>: <why>\" (docs/upgrades.md)", rel, strings.Join(steps, "\n  "))
		}
	}
}

// TestReleasedMigrationsUnchanged refuses an edit or removal of a migration
// the previous release (scripts/previous-release) shipped: databases it
// migrated recorded the file as applied and will never run it again.
func TestReleasedMigrationsUnchanged(t *testing.T) {
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "scripts", "previous-release"))
	if err != nil {
		t.Fatal(err)
	}
	var commit string
	for _, line := range strings.Split(string(raw), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			commit = line
		}
	}
	if _, err := exec.Command("git", "-C", root, "rev-parse", "--verify", commit+"^{commit}").Output(); err != nil {
		t.Skipf("previous release %s is not in this clone (no git, or a shallow clone): %v", commit, err)
	}
	out, err := exec.Command("git", "-C", root, "ls-tree", "-r", "--name-only", commit).Output()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, rel := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !isMigration(rel) {
			continue
		}
		then, err := exec.Command("git", "-C", root, "show", commit+":"+rel).Output()
		if err != nil {
			t.Fatal(err)
		}
		now, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Errorf("%s shipped in the previous release %.12s and is gone: add a migration instead", rel, commit)
			continue
		}
		if !bytes.Equal(then, now) {
			t.Errorf("%s changed since the previous release %.12s applied it: add a migration instead", rel, commit)
		}
		checked++
	}
	if checked == 0 {
		t.Fatalf("the previous release %.12s has no migration files: the pin or the walk is wrong", commit)
	}
}
