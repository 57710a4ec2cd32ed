package com.healthtech.partneropen.codegen;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;

/**
 * Generates the SDK's model classes (package com.healthtech.partneropen.model) from internal/openapi/openapi.yaml,
 * so the models cannot drift from the platform's contract: ModelsMatchOpenApiTest regenerates in memory and fails
 * when the checked-in files differ. Run sdk/java/scripts/generate-models.sh (which calls {@code main}) after the
 * OpenAPI file changes.
 */
public final class ModelGenerator {
  /** Security schemes a partner's server (or its app) authenticates with; every other route is operator-only. */
  public static final Set<String> PARTNER_SCHEMES =
      new HashSet<>(Arrays.asList("AppId", "schemeH", "oauthBearer", "oauthClient"));

  static final String PKG = "com.healthtech.partneropen.model";
  private static final Set<String> KEYWORDS =
      new HashSet<>(Arrays.asList("abstract", "assert", "boolean", "break", "byte", "case", "catch", "char",
          "class", "const", "continue", "default", "do", "double", "else", "enum", "extends", "final", "finally",
          "float", "for", "goto", "if", "implements", "import", "instanceof", "int", "interface", "long", "native",
          "new", "package", "private", "protected", "public", "return", "short", "static", "strictfp", "super",
          "switch", "synchronized", "this", "throw", "throws", "transient", "try", "void", "volatile", "while"));

  private final Map<String, Object> root;
  private final Map<String, Object> schemas;
  private final Map<String, String> out = new TreeMap<>();

  @SuppressWarnings("unchecked")
  private ModelGenerator(Map<String, Object> root) {
    this.root = root;
    this.schemas = (Map<String, Object>) ((Map<String, Object>) root.get("components")).get("schemas");
  }

  /** Loads the OpenAPI document with SnakeYAML (maps keep the file's order). */
  @SuppressWarnings("unchecked")
  public static Map<String, Object> load(Path openapi) throws IOException {
    LoaderOptions opts = new LoaderOptions();
    opts.setCodePointLimit(64 * 1024 * 1024);
    try (InputStream in = Files.newInputStream(openapi)) {
      return (Map<String, Object>) new Yaml(opts).load(in);
    }
  }

  /** One partner operation of the document: method, path, operationId. */
  public static final class Op {
    /** Upper-case HTTP method. */
    public final String method;
    /** Path template as in the document. */
    public final String path;
    /** The operationId, which is also the PartnerClient method's name. */
    public final String operationId;

    Op(String method, String path, String operationId) {
      this.method = method;
      this.path = path;
      this.operationId = operationId;
    }

    @Override
    public String toString() {
      return method + " " + path + " (" + operationId + ")";
    }
  }

  /** The partner operations: those whose security names a partner scheme. */
  @SuppressWarnings("unchecked")
  public static List<Op> partnerOperations(Map<String, Object> root) {
    List<Op> ops = new ArrayList<>();
    Map<String, Object> paths = (Map<String, Object>) root.get("paths");
    for (Map.Entry<String, Object> p : paths.entrySet()) {
      for (Map.Entry<String, Object> m : ((Map<String, Object>) p.getValue()).entrySet()) {
        if (!Arrays.asList("get", "put", "post", "patch", "delete").contains(m.getKey())) {
          continue;
        }
        Map<String, Object> op = (Map<String, Object>) m.getValue();
        List<Object> sec = (List<Object>) op.get("security");
        boolean partner = false;
        if (sec != null) {
          for (Object s : sec) {
            for (String k : ((Map<String, Object>) s).keySet()) {
              partner |= PARTNER_SCHEMES.contains(k);
            }
          }
        }
        if (partner) {
          ops.add(new Op(m.getKey().toUpperCase(), p.getKey(), (String) op.get("operationId")));
        }
      }
    }
    return ops;
  }

  /** Generates every model file: simple file name to its content. */
  @SuppressWarnings("unchecked")
  public static Map<String, String> generate(Map<String, Object> root) {
    ModelGenerator g = new ModelGenerator(root);
    Set<String> refs = new LinkedHashSet<>();
    Map<String, Object> paths = (Map<String, Object>) root.get("paths");
    for (Op op : partnerOperations(root)) {
      g.collect(((Map<String, Object>) paths.get(op.path)).get(op.method.toLowerCase()), refs);
    }
    g.collect(root.get("x-webhooks"), refs);
    Set<String> done = new TreeSet<>();
    List<String> todo = new ArrayList<>(refs);
    while (!todo.isEmpty()) {
      String r = todo.remove(todo.size() - 1);
      if (!done.add(r)) {
        continue;
      }
      Set<String> more = new LinkedHashSet<>();
      g.collect(g.deref(r), more);
      todo.addAll(more);
    }
    for (String r : done) {
      if (!r.startsWith("#/components/schemas/")) {
        continue;
      }
      String name = r.substring("#/components/schemas/".length());
      Map<String, Object> s = (Map<String, Object>) g.schemas.get(name);
      if (g.isObjectLike(s)) {
        g.emitClass(name, s, "#/components/schemas/" + name);
      } else if ("string".equals(s.get("type")) && s.get("enum") != null) {
        g.emitEnum(name, s);
      }
    }
    return g.out;
  }

  @SuppressWarnings("unchecked")
  private void collect(Object o, Set<String> refs) {
    if (o instanceof Map) {
      for (Map.Entry<String, Object> e : ((Map<String, Object>) o).entrySet()) {
        if (e.getKey().equals("$ref")) {
          refs.add((String) e.getValue());
        } else {
          collect(e.getValue(), refs);
        }
      }
    } else if (o instanceof List) {
      for (Object x : (List<Object>) o) {
        collect(x, refs);
      }
    }
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> deref(String ref) {
    String[] p = ref.split("/");
    return (Map<String, Object>) ((Map<String, Object>) ((Map<String, Object>) root.get("components")).get(p[2]))
        .get(p[3]);
  }

  @SuppressWarnings("unchecked")
  private Map<String, Object> resolve(Map<String, Object> s) {
    while (s != null && s.containsKey("$ref")) {
      s = deref((String) s.get("$ref"));
    }
    return s;
  }

  /** Properties of an object schema, allOf parts merged in order. */
  @SuppressWarnings("unchecked")
  private Map<String, Map<String, Object>> properties(Map<String, Object> s) {
    s = resolve(s);
    Map<String, Map<String, Object>> props = new LinkedHashMap<>();
    if (s.get("allOf") != null) {
      for (Object part : (List<Object>) s.get("allOf")) {
        props.putAll(properties((Map<String, Object>) part));
      }
    }
    if (s.get("properties") != null) {
      for (Map.Entry<String, Object> e : ((Map<String, Object>) s.get("properties")).entrySet()) {
        Map<String, Object> prev = props.get(e.getKey());
        // A later part that only narrows an inherited property (an enum, a bound) keeps the inherited schema.
        if (prev == null) {
          props.put(e.getKey(), (Map<String, Object>) e.getValue());
        }
      }
    }
    return props;
  }

  @SuppressWarnings("unchecked")
  private boolean isObjectLike(Map<String, Object> s) {
    s = resolve(s);
    if (s == null) {
      return false;
    }
    // Properties make an object model even beside a oneOf that only pins which data goes with which event.
    if (s.get("properties") != null && !((Map<String, Object>) s.get("properties")).isEmpty()) {
      return true;
    }
    if (s.get("oneOf") != null || s.get("anyOf") != null) {
      return false;
    }
    if (s.get("allOf") != null) {
      for (Object part : (List<Object>) s.get("allOf")) {
        if (isObjectLike((Map<String, Object>) part)) {
          return true;
        }
      }
    }
    return false;
  }

  /**
   * The X of {@code anyOf: [X, NullValue]}, the document's way to make a referenced schema nullable
   * (Java references are nullable anyway), or null when s is not of that form.
   */
  @SuppressWarnings("unchecked")
  private static Map<String, Object> orNull(Map<String, Object> s) {
    Object alts = s.get("anyOf") != null ? s.get("anyOf") : s.get("oneOf");
    if (!(alts instanceof List) || ((List<Object>) alts).size() != 2) {
      return null;
    }
    Map<String, Object> other = null;
    boolean hasNull = false;
    for (Object a : (List<Object>) alts) {
      Map<String, Object> m = (Map<String, Object>) a;
      if ("#/components/schemas/NullValue".equals(m.get("$ref"))) {
        hasNull = true;
      } else {
        other = m;
      }
    }
    return hasNull ? other : null;
  }

  /** A Java type for one property, and how to convert a parsed JSON value {@code v} to it. */
  private static final class JType {
    final String java;
    final String from;

    JType(String java, String from) {
      this.java = java;
      this.from = from;
    }
  }

  @SuppressWarnings("unchecked")
  private JType typeOf(Map<String, Object> s, String owner, String prop, String field) {
    if (s.containsKey("$ref")) {
      String ref = (String) s.get("$ref");
      String name = ref.substring(ref.lastIndexOf('/') + 1);
      Map<String, Object> target = resolve(s);
      if (name.equals("WebhookPayload")) {
        return new JType("com.healthtech.partneropen.webhook.WebhookEvent",
            "JsonValues.as(v, \"" + field + "\", com.healthtech.partneropen.webhook.WebhookEvent::fromJson)");
      }
      if (isObjectLike(target)) {
        return new JType(name, "JsonValues.as(v, \"" + field + "\", " + name + "::fromJson)");
      }
      return typeOf(target, owner, prop, field);
    }
    if (s.get("allOf") != null) {
      List<Object> parts = (List<Object>) s.get("allOf");
      Map<String, Object> base = null;
      boolean narrowsOnly = true;
      for (Object p : parts) {
        Map<String, Object> pm = (Map<String, Object>) p;
        if (pm.containsKey("$ref") && base == null) {
          base = pm;
        } else if (pm.get("properties") != null && base != null
            && !properties(base).keySet().containsAll(((Map<String, Object>) pm.get("properties")).keySet())) {
          narrowsOnly = false;
        } else if (pm.containsKey("$ref")) {
          narrowsOnly = false;
        }
      }
      if (base != null && narrowsOnly) {
        return typeOf(base, owner, prop, field);
      }
      String cls = owner + pascal(prop);
      emitClass(cls, s, "inline " + owner + "." + prop);
      return new JType(cls, "JsonValues.as(v, \"" + field + "\", " + cls + "::fromJson)");
    }
    Map<String, Object> orNull = orNull(s);
    if (orNull != null) {
      return typeOf(orNull, owner, prop, field);
    }
    if (s.get("oneOf") != null || s.get("anyOf") != null) {
      return new JType("Object", "v");
    }
    Object type = s.get("type");
    if (type == null) {
      return new JType("Object", "v");
    }
    switch ((String) type) {
      case "string":
        return new JType("String", "JsonValues.asString(v, \"" + field + "\")");
      case "integer":
        return new JType("Long", "JsonValues.asLong(v, \"" + field + "\")");
      case "number":
        return new JType("Double", "JsonValues.asDouble(v, \"" + field + "\")");
      case "boolean":
        return new JType("Boolean", "JsonValues.asBoolean(v, \"" + field + "\")");
      case "array": {
        Map<String, Object> items = (Map<String, Object>) s.get("items");
        JType it = items == null ? new JType("Object", "v") : typeOf(items, owner, singular(prop), field + "[]");
        String conv = it.from.equals("v") ? "x -> x" : "x -> " + it.from.replace("(v, ", "(x, ");
        return new JType("java.util.List<" + it.java + ">",
            "JsonValues.asList(v, \"" + field + "\", " + conv + ")");
      }
      case "object":
        if (isObjectLike(s)) {
          String cls = owner + pascal(prop);
          emitClass(cls, s, "inline " + owner + "." + prop);
          return new JType(cls, "JsonValues.as(v, \"" + field + "\", " + cls + "::fromJson)");
        }
        return new JType("java.util.Map<String, Object>", "JsonValues.asObject(v, \"" + field + "\")");
      default:
        throw new IllegalStateException("unknown type " + type + " at " + owner + "." + prop);
    }
  }

  private static String singular(String prop) {
    return prop.endsWith("ies") ? prop.substring(0, prop.length() - 3) + "y"
        : prop.endsWith("s") ? prop.substring(0, prop.length() - 1) : prop + "Item";
  }

  static String pascal(String name) {
    StringBuilder sb = new StringBuilder();
    boolean up = true;
    for (char c : name.toCharArray()) {
      if (c == '_' || c == '-' || c == '.' || c == ' ') {
        up = true;
      } else {
        sb.append(up ? Character.toUpperCase(c) : c);
        up = false;
      }
    }
    return sb.toString();
  }

  /** The Java field name for a JSON member name (camel case, keywords suffixed). */
  public static String javaName(String json) {
    String p = pascal(json);
    String n = Character.toLowerCase(p.charAt(0)) + p.substring(1);
    return KEYWORDS.contains(n) ? n + "Value" : n;
  }

  private static String doc(Object description, String fallback) {
    String d = description == null ? "" : description.toString().trim();
    d = d.replaceAll("\\s+", " ");
    int dot = d.indexOf(". ");
    if (dot > 0) {
      d = d.substring(0, dot + 1);
    }
    if (d.length() > 200) {
      d = d.substring(0, 197) + "...";
    }
    if (d.isEmpty()) {
      d = fallback;
    }
    d = d.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("*/", "*&#47;")
        .replace("@", "&#64;").replace("\\u", "\\\\u").replace("`", "");
    return d;
  }

  @SuppressWarnings("unchecked")
  private void emitClass(String name, Map<String, Object> s, String origin) {
    if (out.containsKey(name + ".java")) {
      throw new IllegalStateException("two models named " + name);
    }
    out.put(name + ".java", ""); // reserve the name before nested classes are emitted
    Map<String, Map<String, Object>> props = properties(s);
    Set<String> required = new LinkedHashSet<>();
    collectRequired(s, required);
    StringBuilder b = new StringBuilder();
    b.append("// Code generated by ModelGenerator from internal/openapi/openapi.yaml; DO NOT EDIT.\n\n");
    b.append("package ").append(PKG).append(";\n\n");
    b.append("import com.healthtech.partneropen.json.JsonModel;\n");
    b.append("import com.healthtech.partneropen.json.JsonValues;\n");
    b.append("import java.util.Arrays;\n");
    b.append("import java.util.Collections;\n");
    b.append("import java.util.LinkedHashMap;\n");
    b.append("import java.util.LinkedHashSet;\n");
    b.append("import java.util.List;\n");
    b.append("import java.util.Map;\n");
    b.append("import java.util.Set;\n\n");
    b.append("/** ").append(doc(resolve(s).get("description"), "The " + name + " object of the platform's API."))
        .append(" (OpenAPI: ").append(origin).append(") */\n");
    b.append("public final class ").append(name).append(" implements JsonModel {\n");
    b.append("  /** JSON member names of this model in schema order; tests compare them with the OpenAPI file. */\n");
    b.append("  public static final List<String> FIELDS = Collections.unmodifiableList(Arrays.asList(");
    b.append(joinQuoted(props.keySet())).append("));\n\n");
    b.append("  /** JSON member names the schema marks required. */\n");
    b.append("  public static final List<String> REQUIRED = Collections.unmodifiableList(Arrays.asList(");
    b.append(joinQuoted(required)).append("));\n\n");
    List<String[]> fields = new ArrayList<>();
    for (Map.Entry<String, Map<String, Object>> e : props.entrySet()) {
      JType t = typeOf(e.getValue(), name, e.getKey(), e.getKey());
      String jn = javaName(e.getKey());
      fields.add(new String[] {e.getKey(), jn, t.java, t.from,
          doc(e.getValue().get("description"), "The " + e.getKey() + " member.")});
      b.append("  private ").append(t.java).append(' ').append(jn).append(";\n");
    }
    b.append("  private final Set<String> present = new LinkedHashSet<String>();\n");
    b.append("  private Map<String, Object> raw;\n\n");
    b.append("  /** Creates an empty model; set the members to send with the fluent setters. */\n");
    b.append("  public ").append(name).append("() {}\n\n");
    for (String[] f : fields) {
      String pas = Character.toUpperCase(f[1].charAt(0)) + f[1].substring(1);
      b.append("  /** ").append(f[4]).append(" (JSON {@code ").append(f[0]).append("}) */\n");
      b.append("  public ").append(f[2]).append(" get").append(pas).append("() {\n");
      b.append("    return ").append(f[1]).append(";\n  }\n\n");
      b.append("  /** Sets {@code ").append(f[0])
          .append("} and marks it present, so it is sent even when null (null clears a nullable member). */\n");
      b.append("  public ").append(name).append(" set").append(pas).append('(').append(f[2]).append(" value) {\n");
      b.append("    this.").append(f[1]).append(" = value;\n");
      b.append("    present.add(\"").append(f[0]).append("\");\n");
      b.append("    return this;\n  }\n\n");
    }
    b.append("  /** Whether the JSON member was received or set (absent and null differ on the wire). */\n");
    b.append("  public boolean isSet(String jsonName) {\n    return present.contains(jsonName);\n  }\n\n");
    b.append("  /** The JSON object this model was parsed from (with members newer than this SDK), or null. */\n");
    b.append("  public Map<String, Object> raw() {\n    return raw;\n  }\n\n");
    b.append("  /** Parses a JSON object into this model; unknown members are kept in raw() and ignored. */\n");
    b.append("  public static ").append(name).append(" fromJson(Object json) {\n");
    b.append("    Map<String, Object> m = JsonValues.asObject(json, \"").append(name).append("\");\n");
    b.append("    ").append(name).append(" o = new ").append(name).append("();\n");
    b.append("    o.raw = m;\n");
    b.append("    Object v;\n");
    for (String[] f : fields) {
      b.append("    if (m.containsKey(\"").append(f[0]).append("\")) {\n");
      b.append("      v = m.get(\"").append(f[0]).append("\");\n");
      String pas = Character.toUpperCase(f[1].charAt(0)) + f[1].substring(1);
      b.append("      o.set").append(pas).append('(').append(f[3]).append(");\n");
      b.append("    }\n");
    }
    b.append("    return o;\n  }\n\n");
    b.append("  @Override\n");
    b.append("  public Map<String, Object> toJson() {\n");
    b.append("    Map<String, Object> m = new LinkedHashMap<String, Object>();\n");
    for (String[] f : fields) {
      b.append("    if (present.contains(\"").append(f[0]).append("\")) {\n");
      b.append("      m.put(\"").append(f[0]).append("\", ").append(f[1]).append(");\n    }\n");
    }
    b.append("    return m;\n  }\n\n");
    b.append("  @Override\n  public String toString() {\n");
    b.append("    return \"").append(name).append("\" + com.healthtech.partneropen.json.Json.write(toJson());\n  }\n");
    b.append("}\n");
    out.put(name + ".java", b.toString());
  }

  @SuppressWarnings("unchecked")
  private void collectRequired(Map<String, Object> s, Set<String> req) {
    s = resolve(s);
    if (s.get("allOf") != null) {
      for (Object part : (List<Object>) s.get("allOf")) {
        collectRequired((Map<String, Object>) part, req);
      }
    }
    if (s.get("required") != null && s.get("properties") != null) {
      req.addAll((List<String>) s.get("required"));
    }
  }

  @SuppressWarnings("unchecked")
  private void emitEnum(String name, Map<String, Object> s) {
    StringBuilder b = new StringBuilder();
    b.append("// Code generated by ModelGenerator from internal/openapi/openapi.yaml; DO NOT EDIT.\n\n");
    b.append("package ").append(PKG).append(";\n\n");
    b.append("import java.util.Arrays;\nimport java.util.Collections;\nimport java.util.List;\n\n");
    b.append("/** ").append(doc(s.get("description"), "Values of " + name + "."))
        .append(" (OpenAPI: #/components/schemas/").append(name).append("; string constants, so values newer ")
        .append("than this SDK still parse) */\n");
    b.append("public final class ").append(name).append(" {\n");
    b.append("  private ").append(name).append("() {}\n\n");
    List<String> values = new ArrayList<>();
    for (Object v : (List<Object>) s.get("enum")) {
      if (!(v instanceof String)) {
        continue;
      }
      values.add((String) v);
      String c = ((String) v).toUpperCase().replaceAll("[^A-Z0-9]+", "_").replaceAll("^_|_$", "");
      if (c.isEmpty() || Character.isDigit(c.charAt(0))) {
        c = "V_" + c;
      }
      b.append("  /** The value {@code \"").append(v).append("\"}. */\n");
      b.append("  public static final String ").append(c).append(" = \"").append(v).append("\";\n");
    }
    b.append("\n  /** Every value the OpenAPI file lists, in its order. */\n");
    b.append("  public static final List<String> VALUES = Collections.unmodifiableList(Arrays.asList(")
        .append(joinQuoted(values)).append("));\n}\n");
    out.put(name + ".java", b.toString());
  }

  private static String joinQuoted(Iterable<String> xs) {
    StringBuilder sb = new StringBuilder();
    for (String x : xs) {
      if (sb.length() > 0) {
        sb.append(", ");
      }
      sb.append('"').append(x).append('"');
    }
    return sb.toString();
  }

  /** The repository root: -Dpartneropen.repoRoot, else three levels above the module. */
  public static Path repoRoot() {
    String p = System.getProperty("partneropen.repoRoot");
    return (p != null ? Paths.get(p) : Paths.get("../../..")).toAbsolutePath().normalize();
  }

  /** The checked-in model directory of the core module. */
  public static Path modelDir() {
    return repoRoot().resolve("sdk/java/core/src/main/java/com/healthtech/partneropen/model");
  }

  /** Rewrites the model directory from the OpenAPI file. */
  public static void main(String[] args) throws IOException {
    Map<String, String> files = generate(load(repoRoot().resolve("internal/openapi/openapi.yaml")));
    Path dir = modelDir();
    Files.createDirectories(dir);
    try (java.util.stream.Stream<Path> old = Files.list(dir)) {
      for (Path p : (Iterable<Path>) old::iterator) {
        if (p.toString().endsWith(".java") && !files.containsKey(p.getFileName().toString())) {
          Files.delete(p);
        }
      }
    }
    for (Map.Entry<String, String> e : files.entrySet()) {
      Files.write(dir.resolve(e.getKey()), e.getValue().getBytes(StandardCharsets.UTF_8));
    }
    System.out.println("wrote " + files.size() + " files to " + dir);
  }
}
