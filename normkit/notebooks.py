"""``python -m normkit.notebooks``: execute every lesson notebook with papermill and print a summary.

This is the main job: on a CPU machine the notebooks run at small sizes through Triton's interpreter (cuDNN cells
print why they skip); on a GPU they run at full size. Executed copies go to ``--out``.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import time


def run(notebooks: list[str], out: str, parameters: dict | None = None) -> list[tuple[str, str, float]]:
    import papermill
    from tqdm.auto import tqdm

    os.makedirs(out, exist_ok=True)
    results = []
    for path in (bar := tqdm(notebooks, desc="notebooks", unit="nb")):
        name = os.path.basename(path)
        bar.set_postfix_str(name)
        start = time.perf_counter()
        try:
            papermill.execute_notebook(
                path,
                os.path.join(out, name),
                parameters=parameters or {},
                kernel_name="python3",
                cwd=os.path.dirname(os.path.abspath(path)),
                progress_bar=False,
            )
            status = "passed"
        except Exception as error:  # papermill raises PapermillExecutionError with the failing cell
            status = f"FAILED: {str(error).strip().splitlines()[-1][:100]}"
        results.append((name, status, time.perf_counter() - start))
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m normkit.notebooks", description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebooks to run (default: notebooks/*.ipynb)")
    parser.add_argument("--out", default="out/notebooks", help="folder for the executed notebooks")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(glob.glob(os.path.join("notebooks", "[0-9]*.ipynb")))
    if not paths:
        print("no notebooks found (run from the repository root)", file=sys.stderr)
        return 2
    results = run(paths, args.out)
    width = max(len(name) for name, _, _ in results)
    print(f"\n{'notebook':<{width}}  {'seconds':>8}  result")
    for name, status, seconds in results:
        print(f"{name:<{width}}  {seconds:>8.1f}  {status}")
    failed = sum(status != "passed" for _, status, _ in results)
    print(f"{len(results) - failed} passed, {failed} failed (executed copies in {args.out})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
