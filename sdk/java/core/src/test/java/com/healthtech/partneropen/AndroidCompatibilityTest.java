package com.healthtech.partneropen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The core artifact must load on Java 8 and Android API 24: class files of major version 52, and no reference to
 * APIs Android 24 lacks (java.time and java.util.Base64 arrived in API 26; java.net.http never did).
 */
class AndroidCompatibilityTest {
  static final String[] FORBIDDEN = {"java/time/", "java/net/http/", "java/util/Base64", "javax/crypto/"};

  @Test
  void everyClassIsJava8BytecodeWithoutApisAndroid24Lacks() throws Exception {
    Path classes = Paths.get("target/classes");
    List<String> problems = new ArrayList<>();
    int n = 0;
    try (Stream<Path> s = Files.walk(classes)) {
      for (Path p : (Iterable<Path>) s.filter(f -> f.toString().endsWith(".class"))::iterator) {
        n++;
        byte[] b = Files.readAllBytes(p);
        int major = ((b[6] & 0xff) << 8) | (b[7] & 0xff);
        if (major != 52) {
          problems.add(p + ": class file major " + major);
        }
        String pool = new String(b, StandardCharsets.ISO_8859_1);
        for (String f : FORBIDDEN) {
          if (pool.contains(f)) {
            problems.add(p + ": references " + f);
          }
        }
      }
    }
    assertTrue(n > 50, "expected the compiled core classes, found " + n);
    assertEquals(List.of(), problems);
  }
}
