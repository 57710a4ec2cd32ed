package apiref

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sdkDir is the repository's sdk folder, from this package's folder.
var sdkDir = filepath.Join("..", "..", "sdk")

// sdkSurface is what one SDK offers the snippets: its client's methods,
// the method it maps each operationId to, and its other public names.
type sdkSurface struct {
	methods map[string]bool
	byOp    map[string]string
	names   map[string]bool
}

func readSDK(t *testing.T, parts ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{sdkDir}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// goSurface parses the Go SDK: every method of *Client, the operation
// each one sends (its op("operationId", ...) call), and the package's
// exported names.
func goSurface(t *testing.T) sdkSurface {
	s := sdkSurface{methods: map[string]bool{}, byOp: map[string]string{}, names: map[string]bool{}}
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(sdkDir, "go", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					s.names[d.Name.Name] = true
					continue
				}
				star, ok := d.Recv.List[0].Type.(*ast.StarExpr)
				if !ok {
					continue
				}
				if id, isID := star.X.(*ast.Ident); !isID || id.Name != "Client" {
					continue
				}
				s.methods[d.Name.Name] = true
				ast.Inspect(d.Body, func(n ast.Node) bool {
					c, ok := n.(*ast.CallExpr)
					if !ok || len(c.Args) == 0 {
						return true
					}
					if fn, ok := c.Fun.(*ast.Ident); ok && fn.Name == "op" {
						if lit, ok := c.Args[0].(*ast.BasicLit); ok {
							id, _ := strconv.Unquote(lit.Value)
							s.byOp[id] = d.Name.Name
						}
					}
					return true
				})
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					switch sp := sp.(type) {
					case *ast.TypeSpec:
						s.names[sp.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range sp.Names {
							s.names[n.Name] = true
						}
					}
				}
			}
		}
	}
	return s
}

// jsSurface reads the JavaScript SDK: PartnerClient's methods (named
// after the operationId, for the operations of the generated table) and
// the package's exports.
func jsSurface(t *testing.T) sdkSurface {
	s := sdkSurface{methods: map[string]bool{}, byOp: map[string]string{}, names: map[string]bool{}}
	client := readSDK(t, "js", "src", "client.ts")
	client = client[strings.Index(client, "export class PartnerClient"):]
	for _, m := range regexp.MustCompile(`(?m)^  (?:async \*?|\*)?([a-zA-Z]\w*)\(`).FindAllStringSubmatch(client, -1) {
		s.methods[m[1]] = true
	}
	ops := readSDK(t, "js", "src", "operations.ts")
	for _, m := range regexp.MustCompile(`(?m)^    operationId: "(\w+)"`).FindAllStringSubmatch(ops, -1) {
		if s.methods[m[1]] {
			s.byOp[m[1]] = m[1]
		}
	}
	index := readSDK(t, "js", "src", "index.ts")
	for _, m := range regexp.MustCompile(`export \{([^}]*)\}`).FindAllStringSubmatch(index, -1) {
		for _, n := range strings.Split(m[1], ",") {
			s.names[strings.TrimSpace(n)] = true
		}
	}
	return s
}

// pySurface reads the Python SDK: PartnerClient's methods, its
// OPERATION_METHODS table and the package's __all__.
func pySurface(t *testing.T) sdkSurface {
	s := sdkSurface{methods: map[string]bool{}, byOp: map[string]string{}, names: map[string]bool{}}
	client := readSDK(t, "python", "src", "partner_open_platform", "client.py")
	for _, m := range regexp.MustCompile(`(?m)^    def ([a-z]\w*)\(`).FindAllStringSubmatch(client, -1) {
		s.methods[m[1]] = true
	}
	table := client[strings.Index(client, "OPERATION_METHODS"):]
	table = table[:strings.Index(table, "}")]
	for _, m := range regexp.MustCompile(`"(\w+)": "(\w+)"`).FindAllStringSubmatch(table, -1) {
		s.byOp[m[1]] = m[2]
	}
	init := readSDK(t, "python", "src", "partner_open_platform", "__init__.py")
	for _, m := range regexp.MustCompile(`"(\w+)",`).FindAllStringSubmatch(init[strings.Index(init, "__all__"):], -1) {
		s.names[m[1]] = true
	}
	return s
}

// javaSurface reads the Java SDK: PartnerClient's public methods (named
// after the operationId), its nested types, and EventTypes' members.
func javaSurface(t *testing.T) sdkSurface {
	s := sdkSurface{methods: map[string]bool{}, byOp: map[string]string{}, names: map[string]bool{}}
	client := readSDK(t, "java", "server", "src", "main", "java", "com", "healthtech", "partneropen", "server", "PartnerClient.java")
	for _, m := range regexp.MustCompile(`(?m)^  public (?:static )?[\w<>.]+ (\w+)\(`).FindAllStringSubmatch(client, -1) {
		s.methods[m[1]] = true
		s.byOp[m[1]] = m[1]
	}
	for _, m := range regexp.MustCompile(`public static (?:final )?class (\w+)`).FindAllStringSubmatch(client, -1) {
		s.names["PartnerClient."+m[1]] = true
	}
	events := readSDK(t, "java", "core", "src", "main", "java", "com", "healthtech", "partneropen", "webhook", "EventTypes.java")
	for _, m := range regexp.MustCompile(`public static (?:final )?[\w<>]+ (\w+)`).FindAllStringSubmatch(events, -1) {
		s.names["EventTypes."+m[1]] = true
	}
	return s
}

var (
	clientCall = regexp.MustCompile(`\bclient\.(\w+)\(`)
	goPkgName  = regexp.MustCompile(`\bpartneropen\.(\w+)`)
)

// Every SDK example calls methods its SDK has, and for an operation the
// SDK maps to a method, that very method: a renamed or removed SDK method
// fails here rather than on a partner's screen.
func TestSnippetMethodsExistInSDKs(t *testing.T) {
	surfaces := map[string]sdkSurface{"go": goSurface(t), "js": jsSurface(t), "python": pySurface(t), "java": javaSurface(t)}
	for lang, s := range surfaces {
		if len(s.methods) < 30 || len(s.byOp) < 30 {
			t.Fatalf("%s: only %d methods, %d mapped operations read from the SDK", lang, len(s.methods), len(s.byOp))
		}
	}
	for id, c := range sdkCalls {
		for lang, code := range map[string]string{"go": c.Go, "js": c.JS, "python": c.Python, "java": c.Java} {
			checkSnippet(t, id, lang, code, surfaces[lang])
		}
	}
	for _, s := range SetupSnippets {
		if s.Lang != "curl" {
			checkSnippet(t, "setup", s.Lang, s.Code, surfaces[s.Lang])
		}
	}
}

func checkSnippet(t *testing.T, id, lang, code string, s sdkSurface) {
	t.Helper()
	var called []string
	for _, m := range clientCall.FindAllStringSubmatch(code, -1) {
		called = append(called, m[1])
		if !s.methods[m[1]] {
			t.Errorf("%s (%s): client.%s is not a method of the %s SDK's client", id, lang, m[1], lang)
		}
	}
	if want, ok := s.byOp[id]; ok {
		found := false
		for _, c := range called {
			found = found || c == want
		}
		if !found {
			t.Errorf("%s (%s): the example calls %v, the SDK's method for the operation is %s", id, lang, called, want)
		}
	}
	var names []string
	switch lang {
	case "go":
		for _, m := range goPkgName.FindAllStringSubmatch(code, -1) {
			names = append(names, m[1])
		}
	case "js":
		names = regexp.MustCompile(`\b(eventTypes|isCataloguedEventType|PartnerClient)\b`).FindAllString(code, -1)
	case "python":
		names = regexp.MustCompile(`\b(EVENT_CATALOG|is_catalogued_event_type|PartnerClient)\b`).FindAllString(code, -1)
	case "java":
		names = regexp.MustCompile(`\b(EventTypes\.\w+|PartnerClient\.[A-Z]\w*)\b`).FindAllString(code, -1)
	}
	for _, n := range names {
		if !s.names[n] && !(lang == "java" && n == "PartnerClient.builder") {
			t.Errorf("%s (%s): %s is not a public name of the %s SDK", id, lang, n, lang)
		}
	}
	if s.methods["PartnerClient"] {
		t.Errorf("%s: the class name was read as a method", lang)
	}
}

// The examples cover exactly the partner operations: none missing (Build
// fails then) and none left over for an operation the document no longer
// has or no longer gives partners.
func TestSDKCallsCoverThePartnerOperations(t *testing.T) {
	ref := ServedReference(t)
	partner := map[string]bool{}
	for _, tag := range ref.Tags {
		for _, o := range tag.Operations {
			if o.Partner {
				partner[o.OperationID] = true
			}
		}
	}
	for id := range sdkCalls {
		if !partner[id] {
			t.Errorf("sdkCalls has %s, which is not a partner operation of the document", id)
		}
	}
	if len(partner) < 40 {
		t.Errorf("only %d partner operations", len(partner))
	}
}
