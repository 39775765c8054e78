"""Copier's task (copier.yml): in the copy copier just wrote, the package folder and its name in code renamed,
and pyproject.toml pinned to the template's commit, on the template's files only (never the owner's own).
Copier runs it in each render of an update too (old version, the copy, new version), so its diff stays renamed."""

import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from new_project import PACKAGE, committed, for_copy, readme, rename, write_docs_site, write_license

name, commit, template, clone, spdx, holder, images = sys.argv[1:8]
copy = Path.cwd()
for relative in committed(Path(clone)):  # what copier copied, as the template committed it
    written = copy / relative
    if not written.is_file():  # excluded by copier.yml, or deleted by the owner (copier then leaves it out)
        continue
    parts = relative.parts
    target = copy.joinpath(name if parts[0] == PACKAGE else parts[0], *parts[1:])
    try:
        text = rename(for_copy(relative, written.read_text(), template, commit), name)
    except UnicodeDecodeError:
        text = None
    target.parent.mkdir(parents=True, exist_ok=True)
    if target != written:
        shutil.move(written, target)
    if text is not None:
        target.write_text(text)
shutil.rmtree(copy / PACKAGE, ignore_errors=True)
# copier.yml excludes the template's README.md; copier.yml's `images` left the image-folder DataModule out, or not
(copy / "README.md").write_text(readme(Path(clone), name, template, images == "True"))
write_docs_site(Path(clone), copy, name, template)  # copier.yml excludes the template's mkdocs.yml and docs/
write_license(copy, spdx, holder, time.gmtime().tm_year)  # copier.yml's questions; LICENSES is this render's template
