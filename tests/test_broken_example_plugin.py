"""The example plugin (examples/retriever-plugin), copied with one deliberate fault at a time and installed into a
folder as a wheel would be: discovery refuses each copy with the typed error naming both sides, while the real
example stays installed beside it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from plugin_install import install_distribution, run_with

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "retriever-plugin" / "src" / "rag_tantivy"
BROKEN = "broken-tantivy"


Replacement = tuple[str, str]


def broken_copy(
    site: Path, replacements: Mapping[str, Replacement | list[Replacement]], requires: tuple[str, ...] = ()
) -> None:
    """The example's package as ``broken_tantivy``, each file's ``old`` texts replaced by ``new`` ones."""
    files = {}
    for source in sorted(EXAMPLE.glob("*.py")):
        text = source.read_text(encoding="utf-8").replace("rag_tantivy", "broken_tantivy")
        changes = replacements.get(source.name, [])
        for old, new in [changes] if isinstance(changes, tuple) else changes:
            assert old in text, (source.name, old)
            text = text.replace(old, new, 1)
        files[f"broken_tantivy/{source.name}"] = text
    entry_points = {"mloda.feature_groups": {"broken_tantivy": "broken_tantivy.plugin:FEATURE_GROUPS"}}
    install_distribution(site, BROKEN, files, entry_points, requires)


DISCOVER = """
    import json
    from rag_integration import discover_backends
    from rag_integration.core.errors import ConnectorError
    try:
        found = discover_backends()
    except ConnectorError as error:
        print(json.dumps({"error": type(error).__name__, "message": str(error)}))
    else:
        print(json.dumps({"found": sorted(f"{cls.BACKEND} {cls.__module__}" for cls in found if cls.FAMILY == "retrieve")}))
"""


def discover(site: Path) -> dict[str, str]:
    completed = run_with(site, DISCOVER)
    assert completed.returncode == 0, completed.stderr[-3000:]
    result: dict[str, str] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def renamed(value: str = "tantivy_broken") -> tuple[str, str]:
    return ('BACKEND: ClassVar[str | None] = "tantivy"', f'BACKEND: ClassVar[str | None] = "{value}"')


def test_a_sound_copy_under_another_value_is_discovered_beside_the_example(tmp_path: Path) -> None:
    broken_copy(tmp_path, {"retriever.py": renamed()})
    found = discover(tmp_path)["found"]
    assert "tantivy rag_tantivy.retriever" in found and "tantivy_broken broken_tantivy.retriever" in found


def test_a_copy_claiming_the_examples_value_is_a_registry_collision(tmp_path: Path) -> None:
    broken_copy(tmp_path, {})
    result = discover(tmp_path)
    assert result["error"] == "DuplicateBackendError"
    assert "rag_tantivy.retriever.TantivyRetriever (distribution rag-integration-tantivy)" in result["message"]
    assert "broken_tantivy.retriever.TantivyRetriever (distribution broken-tantivy)" in result["message"]


@pytest.mark.parametrize(
    ("replacements", "error", "said"),
    [
        (
            {
                "retriever.py": renamed(),
                "plugin.py": ("from broken_tantivy", "import tantivy_turbo\nfrom broken_tantivy"),
            },
            "PluginImportError",
            'tantivy_turbo: pip install "broken-tantivy[turbo]"',
        ),
        (
            {
                "retriever.py": (
                    'SUPPORTED_CONTRACTS: ClassVar[tuple[str, ...]] = ("1.0",)',
                    'SUPPORTED_CONTRACTS: ClassVar[tuple[str, ...]] = ("2.0",)',
                )
            },
            "MalformedPluginError",
            "was written for another major version: its family's contract is 1.0, the backend supports ['2.0']",
        ),
        ({"retriever.py": renamed("")}, "MalformedPluginError", "BACKEND must be a lower-case ASCII identifier"),
        (
            {"plugin.py": ("FEATURE_GROUPS = (TantivyRetriever,)", "FEATURE_GROUPS = TantivyRetriever")},
            "MalformedPluginError",
            "list or tuple",
        ),
        (
            {"plugin.py": ("FEATURE_GROUPS = (TantivyRetriever,)", "FEATURE_GROUPS = (TantivyRetriever, 1 / 0)")},
            "PluginImportError",
            "ZeroDivisionError",
        ),
    ],
)
def test_each_broken_copy_is_refused_with_its_typed_error(
    tmp_path: Path, replacements: dict[str, tuple[str, str]], error: str, said: str
) -> None:
    broken_copy(tmp_path, replacements, requires=('tantivy-turbo>=1; extra == "turbo"',))
    result = discover(tmp_path)
    assert result["error"] == error, result
    assert (
        "entry point 'broken_tantivy' (broken_tantivy.plugin:FEATURE_GROUPS) of distribution broken-tantivy"
        in result["message"]
    )
    assert said in result["message"]


MISBEHAVING = [
    renamed(),
    ("if allowed is not None:", "if False:  # the fault: filters are never applied"),
    (
        "        results: list[Hits] = []\n",
        "        time.sleep(0.02)  # the fault: slower than its 'instant' profile promises\n"
        "        logging.getLogger('broken_tantivy').warning('searching with key %s', settings.api_key)  # a leak\n"
        "        results: list[Hits] = []\n",
    ),
    (
        "    match: str = option(",
        '    api_key: str = option("tantivy_api_key", "string", "a key for a service", default="none")\n'
        "    match: str = option(",
    ),
    (
        '    SUPPORTED_CONTRACTS: ClassVar[tuple[str, ...]] = ("1.0",)\n',
        '    SUPPORTED_CONTRACTS: ClassVar[tuple[str, ...]] = ("1.0",)\n'
        '    SECRET_OPTIONS: ClassVar[dict[str, str]] = {"tantivy_api_key": "value"}\n'
        '    PROFILES: ClassVar[dict[str, Profile]] = {"default": Profile(), "instant": Profile(budget_ms=1)}\n',
    ),
    (
        "from __future__ import annotations\n",
        "from __future__ import annotations\n\nimport logging\nimport time\n\n"
        "from rag_integration.core.contract.profiles import Profile\n",
    ),
]
FIXTURE = {
    "name": "filtered_cats",
    "query": "where does the cat sleep",
    "corpus": [
        {"doc_id": "cat-nap", "text": "The cat sleeps on the warm windowsill.", "status": "draft"},
        {"doc_id": "pets", "text": "Our cat and our dog share the garden.", "status": "published"},
        {"doc_id": "oil", "text": "Change the engine oil once a year.", "status": "published"},
    ],
    "options": {"filters": {"status": "published"}},
    "expect": {"top": ["pets"]},
}
CERTIFY = """
    import json, sys
    from rag_integration.testing.certify import certify
    code = certify(["tantivy_broken"], fixtures=[json.loads(sys.argv[1])], report="report.json",
                   pytest_args=["-k", "filters_never_leak or ties_break_by_doc_id"])
    print(json.dumps({"code": code, "report": json.load(open("report.json"))}))
"""


def test_a_misbehaving_copy_is_not_certified_and_its_report_marks_each_failing_check(tmp_path: Path) -> None:
    broken_copy(tmp_path, {"retriever.py": MISBEHAVING})
    completed = run_with(tmp_path, CERTIFY, timeout=600, arguments=[json.dumps(FIXTURE)])
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    report = result["report"]
    assert result["code"] == 1 and report["certified"] is False
    status = {check["id"].split("::")[-1]: check["status"] for check in report["checks"]}
    failed = {name for name, value in status.items() if value == "fail"}
    assert {"fixture[filtered_cats]", "deadline[instant]", "secret"} <= failed, status
    assert any(name.startswith("test_filters_never_leak") for name in failed), status
    assert status["deadline[default]"] == "pass" and status["replay[filtered_cats]"] == "pass"
    assert status["invalid_requests"] == "pass"
    assert any(name.startswith("test_ties_break_by_doc_id") and value == "pass" for name, value in status.items())
    assert report["summary"]["fail"] == len(failed)
