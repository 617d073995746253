"""The project's own promises: environment.yml and pyproject agree, README's commands are what CI runs."""

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
# conda-forge names the PyTorch package differently from PyPI
CONDA_NAMES = {"torch": "pytorch"}


def _name_and_spec(requirement: str):
    match = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(.*)", requirement)
    return match.group(1).lower(), match.group(2).replace(" ", "")


def test_environment_yml_installs_the_same_packages_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # "peers" (Liger, quack: what the benchmark compares against) are GPU-only and installed by hand where measured
    extras = [group for name, group in project["optional-dependencies"].items() if name != "peers"]
    wanted = [project["dependencies"]] + extras
    pyproject = dict(_name_and_spec(r) for group in wanted for r in group)
    env_lines = [
        line.strip()[2:]
        for line in (ROOT / "environment.yml").read_text().splitlines()
        if line.strip().startswith("- ")
    ]
    env = dict(_name_and_spec(line) for line in env_lines if line and line[0].isalpha())
    for name, spec in pyproject.items():
        conda = CONDA_NAMES.get(name, name)
        assert conda in env, f"environment.yml lacks {conda} (pyproject: {name}{spec})"
        assert env[conda] == spec, f"{conda}: environment.yml says {env[conda]!r}, pyproject says {spec!r}"


def _readme_commands():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## Quick start.*?```(?:bash|sh)?\n(.*?)```", readme, re.S)
    assert block, "README.md needs a '## Quick start' section with a code block"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.split("#")[0].strip()]


def test_readme_quick_start_has_the_two_commands():
    commands = _readme_commands()
    assert "make notebooks" in commands and "make test" in commands, commands


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.M), ".ci/run must call README's test command"


def test_makefile_targets_exist():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^notebooks:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
