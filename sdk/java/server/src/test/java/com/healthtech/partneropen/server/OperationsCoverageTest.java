package com.healthtech.partneropen.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;

/**
 * Every partner operation of internal/openapi/openapi.yaml (security AppId/scheme M, schemeH, OAuth) has a
 * PartnerClient method named after its operationId, taking the request body's model and returning the model of
 * the response's data; the models themselves are generated from the same file (core's ModelsMatchOpenApiTest).
 */
class OperationsCoverageTest {
  @Test
  @SuppressWarnings("unchecked")
  void everyPartnerOperationIsCoveredWithItsModels() throws Exception {
    LoaderOptions opts = new LoaderOptions();
    opts.setCodePointLimit(64 * 1024 * 1024);
    Map<String, Object> root;
    try (InputStream in = Files.newInputStream(VectorsTest.repoRoot().resolve("internal/openapi/openapi.yaml"))) {
      root = (Map<String, Object>) new Yaml(opts).load(in);
    }
    Map<String, Object> comps = (Map<String, Object>) root.get("components");
    List<String> problems = new ArrayList<>();
    int partnerOps = 0;
    for (Map.Entry<String, Object> p : ((Map<String, Object>) root.get("paths")).entrySet()) {
      for (Map.Entry<String, Object> m : ((Map<String, Object>) p.getValue()).entrySet()) {
        if (!List.of("get", "post", "put", "patch", "delete").contains(m.getKey())) {
          continue;
        }
        Map<String, Object> op = (Map<String, Object>) m.getValue();
        if (!isPartner(op)) {
          continue;
        }
        partnerOps++;
        String id = (String) op.get("operationId");
        String where = m.getKey().toUpperCase() + " " + p.getKey() + " (" + id + ")";
        List<Method> methods = new ArrayList<>();
        for (Method cm : PartnerClient.class.getMethods()) {
          if (cm.getName().equals(id) && Modifier.isPublic(cm.getModifiers())) {
            methods.add(cm);
          }
        }
        if (methods.isEmpty()) {
          problems.add(where + ": no PartnerClient." + id);
          continue;
        }
        String req = requestModel(op);
        if (req != null && methods.stream().noneMatch(cm -> List.of(cm.getParameterTypes()).stream()
            .anyMatch(t -> t.getSimpleName().equals(req)))) {
          problems.add(where + ": no overload takes " + req);
        }
        String data = responseData(op, comps);
        String want = data == null ? "void" : data;
        if (methods.stream().noneMatch(cm -> cm.getReturnType().getSimpleName().equals(want))) {
          problems.add(where + ": returns " + methods.get(0).getReturnType().getSimpleName() + ", want " + want);
        }
      }
    }
    assertTrue(partnerOps >= 26, "found only " + partnerOps + " partner operations");
    assertEquals(List.of(), problems);
  }

  @SuppressWarnings("unchecked")
  static boolean isPartner(Map<String, Object> op) {
    List<Object> sec = (List<Object>) op.get("security");
    if (sec == null) {
      return false;
    }
    for (Object s : sec) {
      for (String k : ((Map<String, Object>) s).keySet()) {
        if (List.of("AppId", "schemeH", "oauthBearer", "oauthClient").contains(k)) {
          return true;
        }
      }
    }
    return false;
  }

  @SuppressWarnings("unchecked")
  static String requestModel(Map<String, Object> op) {
    Map<String, Object> rb = (Map<String, Object>) op.get("requestBody");
    if (rb == null) {
      return null;
    }
    Map<String, Object> json = (Map<String, Object>) ((Map<String, Object>) rb.get("content")).get("application/json");
    if (json == null) {
      return null; // form bodies (OAuth) are built by the client itself
    }
    return ref((Map<String, Object>) json.get("schema"));
  }

  @SuppressWarnings("unchecked")
  static String responseData(Map<String, Object> op, Map<String, Object> comps) {
    for (Map.Entry<String, Object> r : ((Map<String, Object>) op.get("responses")).entrySet()) {
      if (!String.valueOf(r.getKey()).startsWith("2")) {
        continue;
      }
      Map<String, Object> resp = (Map<String, Object>) r.getValue();
      if (resp.containsKey("$ref")) {
        String name = ref(resp);
        resp = (Map<String, Object>) ((Map<String, Object>) comps.get("responses")).get(name);
      }
      Map<String, Object> content = (Map<String, Object>) resp.get("content");
      if (content == null) {
        return null;
      }
      Map<String, Object> schema = (Map<String, Object>) ((Map<String, Object>) content.get("application/json"))
          .get("schema");
      if (schema.containsKey("$ref")) {
        return ref(schema); // a bare body, such as the OAuth token response
      }
      for (Object part : (List<Object>) schema.getOrDefault("allOf", List.of())) {
        Map<String, Object> props = (Map<String, Object>) ((Map<String, Object>) part).get("properties");
        if (props != null && props.get("data") instanceof Map) {
          return ref((Map<String, Object>) props.get("data"));
        }
      }
      return null;
    }
    return null;
  }

  static String ref(Map<String, Object> s) {
    String r = (String) s.get("$ref");
    return r == null ? null : r.substring(r.lastIndexOf('/') + 1);
  }
}
