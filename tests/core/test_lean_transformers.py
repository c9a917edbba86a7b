"""``load_transformers_only_for``: a PythonDict-only process never imports the other frameworks' libraries."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from rag_integration import load_transformers_only_for
from rag_integration.core.errors import InvalidOptionError

HEAVY = ("pandas", "polars", "pyarrow", "pyspark", "duckdb")

SCRIPT = """
import json, sys
from mloda.user import Feature, Options, PluginCollector, mlodaAPI
from mloda.user.python_dict import PythonDictFramework
{imports}
from rag_integration import Corpus, load_transformers_only_for
from rag_integration.feature_groups.connectors.retrieve import Bm25sRetriever

frameworks = {frameworks}
loaded = load_transformers_only_for(frameworks)
context = {{"retrieve_backend": "bm25s", "corpus": Corpus([{{"doc_id": "a", "text": "change the engine oil"}},
           {{"doc_id": "b", "text": "rotate the tyres"}}]), "query_text": ["engine oil"], "top_k": 1}}
result = mlodaAPI.run_all([Feature("retrieved_passages", options=Options(context=context))],
    compute_frameworks=[frameworks[-1]], plugin_collector=PluginCollector.enabled_feature_groups({{Bm25sRetriever}}))
column = result[0]["retrieved_passages"]
rows = column[0] if isinstance(column, list) else column.iloc[0]
print(json.dumps({{"loaded": loaded, "top": rows[0]["doc_id"], "modules": sorted(m for m in {heavy} if m in sys.modules)}}))
"""


def run(frameworks: str, imports: str = "") -> dict[str, object]:
    code = textwrap.dedent(SCRIPT.format(frameworks=frameworks, imports=imports, heavy=HEAVY))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_python_dict_alone_imports_no_other_framework() -> None:
    assert run("[PythonDictFramework]") == {"loaded": [], "top": "a", "modules": []}


def test_two_frameworks_load_each_ones_transformers_and_answer() -> None:
    result = run("[PythonDictFramework, PandasDataFrame]", "from mloda.user.pandas import PandasDataFrame")
    assert result["top"] == "a"
    loaded = result["loaded"]
    assert any(name.endswith("pandas_pyarrow_transformer") for name in loaded)  # type: ignore[union-attr]
    assert any(name.endswith("python_dict_pyarrow_transformer") for name in loaded)  # type: ignore[union-attr]
    assert not any("spark" in name or "polars" in name for name in loaded)  # type: ignore[union-attr]


def test_anything_but_framework_classes_is_refused() -> None:
    with pytest.raises(InvalidOptionError, match="frameworks"):
        load_transformers_only_for(["PythonDictFramework"])
