"""Run folders: where they are and who holds one (layout: run_dir, run_folder), the files in one and which option
names each (files), what a run is named (naming: run_name), and which earlier run is the same recipe, what
`--ckpt_path best|last` resumes (recipes: choose, recipe, recipe_hash).

Nothing is imported here: `layout` and `recipes` need no torch, and the `runs` table, which reads them, starts
without it."""
