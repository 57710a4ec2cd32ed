package apiref

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// partnerSnippets is every partner operation's examples by language, as
// the pages show them (request example included).
func partnerSnippets(t *testing.T) map[string]map[string]string {
	t.Helper()
	ref := ServedReference(t)
	out := map[string]map[string]string{}
	for _, tag := range ref.Tags {
		for _, o := range tag.Operations {
			for _, s := range o.Snippets {
				if out[s.Lang] == nil {
					out[s.Lang] = map[string]string{}
				}
				out[s.Lang][o.OperationID] = s.Code
			}
		}
	}
	if len(out["go"]) < 40 {
		t.Fatalf("only %d Go examples", len(out["go"]))
	}
	return out
}

func sortedIDs(m map[string]string) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func setupCode(lang string) string {
	for _, s := range SetupSnippets {
		if s.Lang == lang {
			return s.Code
		}
	}
	return ""
}

// The Go examples compile against the Go SDK as they are shown: the setup
// and each operation's example (request model, method, arguments, result
// fields), each in a function of the examples' stated shape.
func TestGoSnippetsCompile(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	snippets := partnerSnippets(t)["go"]
	var b strings.Builder
	b.WriteString("package snippetcheck\n\nimport (\n\t\"context\"\n\t\"encoding/json\"\n\t\"fmt\"\n\t\"os\"\n\n\tpartneropen \"github.com/healthtech/partner-open-platform/sdk/go\"\n)\n\n")
	b.WriteString("var _ = json.Unmarshal\nvar _ = fmt.Println\n\n")
	var setup []string
	for _, l := range strings.Split(setupCode("go"), "\n") {
		if !strings.HasPrefix(l, "import ") {
			setup = append(setup, l)
		}
	}
	fmt.Fprintf(&b, "func setup() error {\n%s\n_ = client\nreturn nil\n}\n\n", strings.Join(setup, "\n"))
	b.WriteString("var _ = os.Getenv\n\n")
	for _, id := range sortedIDs(snippets) {
		fmt.Fprintf(&b, "func %s(ctx context.Context, client *partneropen.Client) error {\n%s\nreturn nil\n}\n\n", id, snippets[id])
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "check.go")
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sdk, err := filepath.Abs(filepath.Join(sdkDir, "go"))
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(dir, "overlay.json")
	target := filepath.Join(sdk, "internal", "snippetcheck", "check.go")
	if err := os.WriteFile(overlay, []byte(fmt.Sprintf(`{"Replace":{%q:%q}}`, target, src)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, "build", "-overlay", overlay, "./internal/snippetcheck")
	cmd.Dir = sdk
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Go examples do not compile against sdk/go: %v\n%s\n--- the examples:\n%s", err, out, b.String())
	}
}

// The Python examples parse, and the JavaScript ones pass node --check,
// as they are shown (each in a function, after the setup).
func TestPythonAndJavaScriptSnippetsParse(t *testing.T) {
	all := partnerSnippets(t)
	if py, err := exec.LookPath("python3"); err == nil {
		var b strings.Builder
		b.WriteString(setupCode("python") + "\n\n")
		for _, id := range sortedIDs(all["python"]) {
			fmt.Fprintf(&b, "def %s():\n%s\n\n", id, indent(all["python"][id], "    "))
		}
		src := filepath.Join(t.TempDir(), "check.py")
		if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(py, "-c", "import ast, sys; ast.parse(open(sys.argv[1]).read())", src).CombinedOutput(); err != nil {
			t.Errorf("the Python examples do not parse: %v\n%s", err, out)
		}
	} else {
		t.Log("no python3: the Python examples are not parsed")
	}
	if node, err := exec.LookPath("node"); err == nil {
		var b strings.Builder
		b.WriteString(setupCode("js") + "\n\n")
		for _, id := range sortedIDs(all["js"]) {
			fmt.Fprintf(&b, "async function %s() {\n%s\n}\n\n", id, indent(all["js"][id], "  "))
		}
		src := filepath.Join(t.TempDir(), "check.mjs")
		if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(node, "--check", src).CombinedOutput(); err != nil {
			t.Errorf("the JavaScript examples do not parse: %v\n%s", err, out)
		}
	} else {
		t.Log("no node: the JavaScript examples are not checked")
	}
}

func indent(code, by string) string {
	lines := strings.Split(code, "\n")
	for i, l := range lines {
		lines[i] = by + l
	}
	return strings.Join(lines, "\n")
}
