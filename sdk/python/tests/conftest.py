"""Shared paths: the repository root, the shared signature vectors and the OpenAPI document."""

from __future__ import annotations

import json
import os
from typing import Any, Dict

import pytest

SDK_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_ROOT = os.path.dirname(os.path.dirname(SDK_DIR))
OPENAPI = os.path.join(REPO_ROOT, "internal", "openapi", "openapi.yaml")
PLUGIN_VECTORS = os.path.join(REPO_ROOT, "internal", "measureplugin", "testdata", "vectors.json")


def vectors_path() -> str:
    """PLATFORM_VECTORS, else ../shared/vectors/signatures.json beside the repository."""
    env = os.environ.get("PLATFORM_VECTORS")
    if env:
        return env
    return os.path.join(os.path.dirname(REPO_ROOT), "shared", "vectors", "signatures.json")


@pytest.fixture(scope="session")
def vectors() -> Dict[str, Any]:
    path = vectors_path()
    if not os.path.exists(path):
        pytest.fail("shared signature vectors not found at %s (set PLATFORM_VECTORS)" % path)
    with open(path, "rb") as f:
        data: Dict[str, Any] = json.load(f)
    return data


@pytest.fixture(scope="session")
def plugin_vectors() -> Dict[str, Any]:
    with open(PLUGIN_VECTORS, "rb") as f:
        data: Dict[str, Any] = json.load(f)
    return data
