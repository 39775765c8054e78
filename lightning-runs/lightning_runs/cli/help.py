"""`--help` a person reads: a type with more known subclasses than a screen holds (a network's `nn.Module`: every module
torch, torchmetrics and Lightning import) says how many rather than listing them. jsonargparse has no setting for it
(4.53: `ActionTypeHint.extra_help` lists every imported subclass, Lightning #20591): argparse's formatter method
`_get_help_string` is overridden (private.py)."""

import re

from jsonargparse import DefaultHelpFormatter

MAX_LISTED = 20  # known subclasses listed in a type's help up to this many (the optimizers are 16)
_KNOWN = re.compile(r", known subclasses: (?P<paths>[^()]*)\)$")


class RunsHelpFormatter(DefaultHelpFormatter):
    def _get_help_string(self, action) -> str:
        text = super()._get_help_string(action)
        known = _KNOWN.search(text)
        count = len(known["paths"].split(", ")) if known else 0
        return f"{text[: known.start()]}, {count} known subclasses)" if count > MAX_LISTED else text
