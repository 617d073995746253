"""Every committed notebook: stored without outputs, a Colab badge that points at itself, a parameters cell."""

import ast
import json
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 5


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert not cell.outputs, f"{path.name} cell {i} carries outputs; clear them before committing"
            assert cell.execution_count is None, f"{path.name} cell {i} carries an execution count"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_colab_badge_links_to_this_notebook(path):
    nb = nbformat.read(path, as_version=4)
    first = nb.cells[0].source
    assert "colab-badge.svg" in first, f"{path.name}: the first cell needs the Colab badge"
    link = re.search(r"colab\.research\.google\.com/github/[^/]+/[^/]+/blob/main/(\S+?)\)", first)
    assert link and link.group(1) == f"notebooks/{path.name}", f"{path.name}: badge link {link and link.group(1)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_has_a_parameters_cell_and_a_guarded_install(path):
    nb = nbformat.read(path, as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: needs exactly one cell tagged 'parameters' (papermill)"
    install = [c for c in nb.cells if c.cell_type == "code" and "pip" in c.source]
    assert install and all('"google.colab" in sys.modules' in c.source for c in install), path.name
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3", f"{path.name}: papermill needs a kernelspec"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_valid_nbformat_with_cell_ids(path):
    """nbformat 4.5 wants an id on every cell (a cell without one is a warning now and an error in later versions)."""
    raw = json.loads(path.read_text())
    ids = [cell.get("id") for cell in raw["cells"]]
    missing = [i for i, cell_id in enumerate(ids) if not cell_id]
    assert not missing, f"{path.name}: cells {missing} have no id"
    assert len(set(ids)) == len(ids), f"{path.name}: cell ids repeat"
    nbformat.validate(nbformat.reads(path.read_text(), as_version=4))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_prose_above_the_parameters_names_them(path):
    """The markdown cell right above the parameters cell names parameters in backticks; each name it gives is one the
    parameters cell assigns (prose copied from another lesson would name parameters this one does not have)."""
    nb = nbformat.read(path, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    prose = nb.cells[at - 1]
    assert prose.cell_type == "markdown", f"{path.name}: the parameters cell needs a markdown cell above it"
    named = set(re.findall(r"`([A-Za-z_]\w*)`", prose.source))
    assigned = set()
    for node in ast.walk(ast.parse(nb.cells[at].source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            assigned.add(node.id)
    assert named, f"{path.name}: the cell above the parameters names none of them"
    assert named <= assigned, f"{path.name}: the prose names {sorted(named - assigned)}, not parameters here"


def test_lesson_02_prints_the_forwards_zero_centered_product():
    """Lesson 02 prints the lines of the forward's ``_scale_shift_store`` its prose describes, picked by the strings
    of its filter: they must hold the zero-centered product (an assignment to y), not the switch alone (round 84 found
    the filter still looking for the ``w += 1`` the forward had dropped)."""
    import inspect

    from normkit.triton import norm_fwd

    nb = nbformat.read(ROOT / "notebooks" / "02_layernorm_zero_centered_gamma.ipynb", as_version=4)
    cell = next(c.source for c in nb.cells if c.cell_type == "code" and "_scale_shift_store" in c.source)
    picked = re.findall(r'"([^"]+)" in line', cell)
    assert picked, cell
    source = inspect.getsource(norm_fwd._scale_shift_store.fn)
    shown = [line for line in source.splitlines() if any(p in line for p in picked)]
    assert any(line.strip().startswith("y = ") for line in shown), shown
