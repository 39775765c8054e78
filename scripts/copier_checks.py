"""copier.yml's check of the package name: the one `make new-project` makes (new_project.check_name), as a Jinja
filter copier's validator calls, so that both refuse the same names (keywords, the standard library's and installed
top-level names, the copy's own folders). Loaded through copier-template-extensions; --trust runs it."""

import sys
from pathlib import Path

from jinja2.ext import Extension

sys.path.insert(0, str(Path(__file__).parent))
from new_project import check_name


def refusal(name: str) -> str:
    try:
        check_name(name, Path(__file__).resolve().parents[1])  # this render's template (an update renders two)
    except ValueError as error:
        return str(error)
    return ""


class PackageName(Extension):
    def __init__(self, environment) -> None:
        super().__init__(environment)
        environment.filters["package_refusal"] = refusal
