"""discover_backends(): entry points read in a fixed order, each kind of broken plugin refused with its typed error
naming both sides, an optional dependency's absence skipped, and nothing built or imported beyond the manifest."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from plugin_install import install_distribution, run_with

from rag_integration import discover_backends
from rag_integration.registry import lookalike_skeleton, package_backend_classes

FEATURE_GROUPS = {"mloda.feature_groups": {"toy": "toy_plugin.manifest:FEATURE_GROUPS"}}

GOOD_BACKEND = """
    from typing import ClassVar
    from rag_integration.core.contract.profiles import Profile
    from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever


    class ToyRetriever(Bm25sRetriever):
        BACKEND: ClassVar[str | None] = {backend!r}
        SUPPORTED_CONTRACTS: ClassVar[tuple[str, ...]] = {contracts!r}
        REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ("toy_engine",)
        PROFILES = {profiles}

        @classmethod
        def build_index(cls, documents, settings):
            import toy_engine  # the library: imported when a request builds an index, never by discovery
            return super().build_index(documents, settings)
"""
DEFAULT_PROFILES = '{"default": Profile(budget_ms=2000), "fast": Profile({"bm25_k1": 1.2}, budget_ms=300)}'
ENGINE = 'open("engine-imported", "w").close()\n'


def toy_files(
    backend: str = "toy", contracts: tuple[str, ...] = ("1.0",), profiles: str = DEFAULT_PROFILES, manifest: str = ""
) -> dict[str, str]:
    return {
        "toy_plugin/__init__.py": "",
        "toy_plugin/backend.py": GOOD_BACKEND.format(backend=backend, contracts=contracts, profiles=profiles),
        "toy_plugin/manifest.py": manifest
        or "from toy_plugin.backend import ToyRetriever\nFEATURE_GROUPS = (ToyRetriever,)\n",
        "toy_engine.py": ENGINE,
    }


DISCOVER = """
    import json
    from rag_integration import discover_backends
    from rag_integration.core.errors import ConnectorError
    try:
        found = discover_backends()
    except ConnectorError as error:
        print(json.dumps({"error": type(error).__name__, "message": str(error),
                          "collision": isinstance(error, __import__("mloda.provider").provider.PluginRegistryCollisionError)}))
    else:
        from rag_integration.registry import SKIPPED_PLUGINS
        print(json.dumps({"found": [f"{cls.FAMILY}/{cls.BACKEND}/{cls.__module__}" for cls in found],
                          "skipped": {name: skip.missing for name, skip in SKIPPED_PLUGINS.items()}}))
"""


def discover_in(site: Path) -> dict[str, object]:
    completed = run_with(site, DISCOVER)
    assert completed.returncode == 0, completed.stderr[-3000:]
    result: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def test_discovery_lists_ours_and_installed_backends_in_a_fixed_order_and_imports_no_library(tmp_path: Path) -> None:
    install_distribution(tmp_path, "toy-plugin", toy_files(), FEATURE_GROUPS)
    result = discover_in(tmp_path)
    found = result["found"]
    assert isinstance(found, list) and "retrieve/toy/toy_plugin.backend" in found
    assert found == sorted(found, key=lambda text: tuple(text.split("/")[:2]))
    assert len(found) == len(discover_backends()) + 1  # ours, any plugin installed here (the tantivy example), the toy
    assert not (tmp_path / "engine-imported").exists()


def test_discovery_in_process_lists_only_ours_and_entry_points() -> None:
    class DefinedInATest(package_backend_classes()[0]):  # type: ignore[misc, valid-type]
        BACKEND = "defined-in-a-test"

    assert DefinedInATest not in discover_backends()
    assert set(package_backend_classes()) <= set(discover_backends())


def test_two_plugins_claiming_one_selector_value_are_refused_naming_both(tmp_path: Path) -> None:
    install_distribution(tmp_path, "toy-plugin", toy_files(), FEATURE_GROUPS)
    other = {
        "rival_plugin/__init__.py": "from toy_plugin.backend import ToyRetriever\n\n"
        "class RivalRetriever(ToyRetriever):\n    pass\n\nFEATURE_GROUPS = (RivalRetriever,)\n"
    }
    install_distribution(
        tmp_path, "rival-plugin", other, {"mloda.feature_groups": {"rival": "rival_plugin:FEATURE_GROUPS"}}
    )
    result = discover_in(tmp_path)
    assert result["error"] == "DuplicateBackendError" and result["collision"] is True
    message = str(result["message"])
    assert "toy_plugin.backend.ToyRetriever (distribution toy-plugin)" in message
    assert "rival_plugin.RivalRetriever (distribution rival-plugin)" in message
    assert "retrieve_backend='toy'" in message


def test_a_plugin_claiming_one_of_our_values_is_refused(tmp_path: Path) -> None:
    install_distribution(tmp_path, "toy-plugin", toy_files(backend="bm25s"), FEATURE_GROUPS)
    result = discover_in(tmp_path)
    assert result["error"] == "DuplicateBackendError"
    assert "Bm25sRetriever (distribution rag-integration)" in str(result["message"])
    assert "ToyRetriever (distribution toy-plugin)" in str(result["message"])


def test_a_missing_dependency_names_the_extra_that_brings_it(tmp_path: Path) -> None:
    files = toy_files(manifest="import faster_toy_engine\nFEATURE_GROUPS = ()\n")
    requires = ['faster-toy-engine>=2; extra == "fast"']
    install_distribution(tmp_path, "toy-plugin", files, FEATURE_GROUPS, requires)
    result = discover_in(tmp_path)
    assert result["error"] == "PluginImportError"
    message = str(result["message"])
    assert "entry point 'toy' (toy_plugin.manifest:FEATURE_GROUPS) of distribution toy-plugin" in message
    assert "faster_toy_engine" in message and 'pip install "toy-plugin[fast]"' in message


def test_a_missing_dependency_the_distribution_marks_optional_is_skipped(tmp_path: Path) -> None:
    files = toy_files(manifest="import faster_toy_engine\nFEATURE_GROUPS = ()\n")
    files["toy_plugin/optional.py"] = "OPTIONAL_ROOTS = ('faster_toy_engine',)\n"
    entry_points = {**FEATURE_GROUPS, "mloda.optional_dependencies": {"toy": "toy_plugin.optional:OPTIONAL_ROOTS"}}
    install_distribution(tmp_path, "toy-plugin", files, entry_points)
    result = discover_in(tmp_path)
    assert result["skipped"] == {"toy": "faster_toy_engine"}


def test_a_manifest_that_fails_while_built_or_lacks_its_own_module_is_refused(tmp_path: Path) -> None:
    install_distribution(
        tmp_path, "toy-plugin", toy_files(manifest="raise RuntimeError('no config')\n"), FEATURE_GROUPS
    )
    result = discover_in(tmp_path)
    assert result["error"] == "PluginImportError" and "RuntimeError: no config" in str(result["message"])

    other = tmp_path / "other"
    install_distribution(other, "gone-plugin", {}, {"mloda.feature_groups": {"gone": "gone_plugin.manifest:X"}})
    result = discover_in(other)
    assert result["error"] == "PluginImportError"
    assert "cannot import its own module 'gone_plugin'" in str(result["message"])
    assert "reinstall gone-plugin" in str(result["message"])


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"manifest": "from toy_plugin.backend import ToyRetriever\nFEATURE_GROUPS = ToyRetriever\n"}, "list or tuple"),
        ({"manifest": "FEATURE_GROUPS = ('ToyRetriever',)\n"}, "which is not a class"),
        ({"contracts": ("2.0",)}, "was written for another major version"),
        ({"contracts": ("1.7",)}, "does not list this minor version"),
        ({"backend": ""}, "BACKEND must be a lower-case ASCII identifier"),
        ({"backend": "bm25\u0455"}, "BACKEND must be a lower-case ASCII identifier"),  # a Cyrillic dze
        ({"backend": "Toy"}, "BACKEND must be a lower-case ASCII identifier"),
        ({"backend": "toy\u200b"}, "BACKEND must be a lower-case ASCII identifier"),
        ({"profiles": '{"fast": Profile(budget_ms=300)}'}, "PROFILES must include 'default'"),
        ({"profiles": '{"default": Profile(budget_ms=0)}'}, "budget_ms 0"),
        ({"profiles": '{"default": Profile({"bm25_k9": 1})}'}, "presets 'bm25_k9', which the backend does not declare"),
        ({"profiles": '{"default": Profile({"retrieve_backend": "bm25s"})}'}, "which a profile cannot choose"),
        ({"profiles": '{"default": Profile({"corpus_source": "docs"})}'}, "presets 'corpus_source', which a profile"),
        ({"profiles": '{"Default!": Profile()}'}, "profile name 'Default!'"),
    ],
)
def test_malformed_declarations_are_refused_naming_the_plugin_and_the_problem(
    tmp_path: Path, change: dict[str, object], problem: str
) -> None:
    install_distribution(tmp_path, "toy-plugin", toy_files(**change), FEATURE_GROUPS)  # type: ignore[arg-type]
    result = discover_in(tmp_path)
    assert result["error"] == "MalformedPluginError", result
    assert "of distribution toy-plugin" in str(result["message"]) and problem in str(result["message"])


def test_backends_lists_a_plugin_with_its_distribution_version_contract_and_profiles(tmp_path: Path) -> None:
    install_distribution(tmp_path, "toy-plugin", toy_files(), FEATURE_GROUPS, version="2.3.1")
    code = """
        import json
        from rag_integration import available_backends
        print(json.dumps([row for row in available_backends() if row["value"] == "toy"]))
    """
    completed = run_with(tmp_path, code)
    assert completed.returncode == 0, completed.stderr[-3000:]
    (row,) = json.loads(completed.stdout.strip().splitlines()[-1])
    assert row["distribution"] == "toy-plugin" and row["version"] == "2.3.1"
    assert row["contract"] == "1.0 (supports 1.0)"
    assert row["profiles"]["fast"] == {"options": {"bm25_k1": 1.2}, "budget_ms": 300, "description": ""}
    assert set(row["profiles"]) == {"default", "fast"}
    table = run_with(tmp_path, "from rag_integration.cli import main\nmain(['backends'])\n")
    assert "default (2000 ms), fast (300 ms)" in table.stdout.replace("\n", " ") or "fast (300" in table.stdout


def test_discovery_imports_none_of_the_libraries_our_extras_bring(tmp_path: Path) -> None:
    code = """
        import json, sys
        from rag_integration import available_backends, discover_backends
        from rag_integration.plugins import OPTIONAL_ROOTS
        discover_backends(), available_backends()
        print(json.dumps(sorted(root for root in OPTIONAL_ROOTS if root in sys.modules)))
    """
    completed = run_with(tmp_path, code)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert json.loads(completed.stdout.strip().splitlines()[-1]) == []


def test_discovery_and_mlodas_loader_work_with_every_optional_library_missing(tmp_path: Path) -> None:
    code = """
        import json, sys
        from rag_integration.plugins import OPTIONAL_ROOTS

        for root in OPTIONAL_ROOTS:  # None in sys.modules: an import raises ModuleNotFoundError, find_spec finds none
            sys.modules[root] = None
        from mloda.user import PluginLoader
        from rag_integration import available_backends, discover_backends
        PluginLoader.all(force_reload=True)
        rows = available_backends()
        print(json.dumps({"found": len(discover_backends()), "installed": sum(row["installed"] for row in rows)}))
    """
    completed = run_with(tmp_path, code)
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["found"] == len(discover_backends())  # a plugin needing none of them (the tantivy example) stays
    assert result["installed"] < len(package_backend_classes())


def test_a_value_reading_like_a_loaded_one_is_refused(tmp_path: Path) -> None:
    """Lower-case ASCII letters still read alike in groups ("rn" and "m", "1" and "l"): such a value is refused."""
    assert lookalike_skeleton("brn25s") == lookalike_skeleton("bm25s")
    assert lookalike_skeleton("l1m") == lookalike_skeleton("llm") and lookalike_skeleton("ternplate") == "template"
    assert lookalike_skeleton("tfidf") != lookalike_skeleton("tfldf")
    install_distribution(tmp_path, "toy-plugin", toy_files(backend="brn25s"), FEATURE_GROUPS)
    result = discover_in(tmp_path)
    assert result["error"] == "MalformedPluginError", result
    assert "retrieve_backend='brn25s', which reads like 'bm25s'" in str(result["message"])


BACKENDS_AND_ASK = """
    import sys
    from rag_integration.cli import main
    code = main(sys.argv[1:])
    print("exit", code)
"""


def test_a_broken_plugin_nobody_selects_is_listed_and_stops_only_a_request_selecting_it(tmp_path: Path) -> None:
    install_distribution(
        tmp_path, "toy-plugin", toy_files(manifest="raise RuntimeError('no config')\n"), FEATURE_GROUPS
    )
    rival = {
        "rival_plugin/__init__.py": textwrap.dedent(GOOD_BACKEND)
        .format(backend="bm25s", contracts=("1.0",), profiles=DEFAULT_PROFILES)
        .replace("ToyRetriever", "RivalRetriever")
        + "\nFEATURE_GROUPS = (RivalRetriever,)\n"
    }
    install_distribution(
        tmp_path, "rival-plugin", rival, {"mloda.feature_groups": {"rival": "rival_plugin:FEATURE_GROUPS"}}
    )
    listed = run_with(tmp_path, BACKENDS_AND_ASK, arguments=["backends"])
    assert "exit 0" in listed.stdout, listed.stderr[-2000:]
    assert "not loaded: plugin 'toy'" in listed.stderr and "RuntimeError: no config" in listed.stderr
    assert "not loaded: plugin 'rival'" in listed.stderr and "Bm25sRetriever" in listed.stderr
    (tmp_path / "notes.txt").write_text("The bakery sells rye bread on Mondays.\n", encoding="utf-8")
    question = ["ask", "When is rye bread sold?", "--files", str(tmp_path / "notes.txt"), "--no-cache", "--no-progress"]
    asked = run_with(tmp_path, BACKENDS_AND_ASK, arguments=[*question, "--backend", "tfidf"])
    assert "exit 0" in asked.stdout and "Mondays" in asked.stdout, asked.stderr[-2000:]
    selected = run_with(tmp_path, BACKENDS_AND_ASK, arguments=[*question, "--backend", "bm25s"])
    assert "exit 2" in selected.stdout and "rival_plugin.RivalRetriever" in selected.stderr  # which bm25s is meant?
