package com.healthtech.partneropen.codegen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The checked-in models are exactly what the generator makes from the OpenAPI file today. */
class ModelsMatchOpenApiTest {
  @Test
  void regeneratingChangesNothing() throws Exception {
    Map<String, String> want =
        ModelGenerator.generate(ModelGenerator.load(ModelGenerator.repoRoot().resolve("internal/openapi/openapi.yaml")));
    Map<String, String> have = new TreeMap<>();
    try (Stream<Path> files = Files.list(ModelGenerator.modelDir())) {
      for (Path p : (Iterable<Path>) files::iterator) {
        have.put(p.getFileName().toString(), new String(Files.readAllBytes(p), StandardCharsets.UTF_8));
      }
    }
    assertTrue(want.size() > 50, "the generator should produce the partner models, got " + want.keySet());
    assertEquals(want.keySet(), have.keySet(),
        "model files differ from the OpenAPI file; run sdk/java/scripts/generate-models.sh");
    for (String f : want.keySet()) {
      assertEquals(want.get(f), have.get(f), f + " is stale; regenerate (see the message above)");
    }
  }
}
