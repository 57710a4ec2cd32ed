package com.healthtech.partneropen;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/** Locations of files outside the SDK the tests read (never write). */
public final class TestFiles {
  private TestFiles() {}

  /** The repository root (set by the POM's surefire configuration). */
  public static Path repoRoot() {
    String p = System.getProperty("partneropen.repoRoot");
    return (p != null ? Paths.get(p) : Paths.get("../../..")).toAbsolutePath().normalize();
  }

  /** The shared signature vectors: $PLATFORM_VECTORS, else ../shared/vectors/signatures.json beside the repo. */
  public static Path vectors() {
    String env = System.getenv("PLATFORM_VECTORS");
    if (env != null && !env.isEmpty()) {
      return Paths.get(env);
    }
    Path beside = repoRoot().resolve("../shared/vectors/signatures.json").normalize();
    if (Files.exists(beside)) {
      return beside;
    }
    return Paths.get("/work/shared/vectors/signatures.json");
  }

  /** The platform's own plugin vectors (launch URL, profile encryption). */
  public static Path pluginVectors() {
    return repoRoot().resolve("internal/measureplugin/testdata/vectors.json");
  }

  /** The OpenAPI document. */
  public static Path openapi() {
    return repoRoot().resolve("internal/openapi/openapi.yaml");
  }
}
