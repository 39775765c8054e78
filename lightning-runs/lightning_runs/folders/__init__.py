"""Run folders: where they are and who holds one (layout), the files in one and which option names each (files),
what a run is named (naming), and which earlier run is the same recipe, what `--ckpt_path best|last` resumes
(recipes)."""

from lightning_runs.folders.layout import run_dir, run_folder
from lightning_runs.folders.naming import run_name
from lightning_runs.folders.recipes import choose, recipe, recipe_hash

__all__ = ["choose", "recipe", "recipe_hash", "run_dir", "run_folder", "run_name"]
