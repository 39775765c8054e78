"""The largest sizes the machinery accepts, each with its reason, written once. Each is checked where the value
enters (named beside it), and a value past it is refused in one line naming the limit, before any run folder exists.
Raise one here, with its reason, if your work needs more.
"""

# Config files (--config, and files named inside one): read before jsonargparse parses them (bounded.py). The
# shipped configs are under 2 KB; a 5 MB file of 300,000 keys kept jsonargparse busy for more than 200 s.
MAX_CONFIG_BYTES = 1_000_000
# Keys of one YAML document, counted as it is composed (parser.py). The resolved default config has about 150.
MAX_CONFIG_KEYS = 10_000
# Values a YAML document may expand to through its aliases (parser.py): a 1 KB "billion laughs" file expanded to
# billions, which jsonargparse then copied into its error message (6 GB, no end).
MAX_YAML_NODES = 100_000
# Levels of lists and mappings one inside another in a YAML document (parser.py), aliases expanded: PyYAML's composer
# and jsonargparse recurse once a level, and 10,000 levels ended in a RecursionError traceback. The resolved default
# config nests 6 deep.
MAX_YAML_DEPTH = 100

# Bytes of a run's own small files read back (summary.json, config.yaml: a few KB each), by `runs` and by
# `--ckpt_path last|best` looking through earlier runs (folders/layout.py): a summary that was a link to /dev/zero was
# read until memory ran out.
MAX_RUN_FILE_BYTES = 10_000_000

# Bytes of a run's folder name (naming.py): what Linux and macOS filesystems allow (NAME_MAX); a longer name failed
# with a traceback after the run had started.
MAX_NAME_BYTES = 255

# Values of any one tensor built while the model, data and callbacks are instantiated (bounded.py): checked before
# it is allocated, so that `channels: [1000000000, 64]` (a 36 GB weight) or 1e9 classes is one line, not an
# allocator's traceback or a machine out of memory. 2**30 values are 4 GiB of float32, more than the largest single
# weight of today's large language models (a 256k-word embedding of width 4096).
MAX_TENSOR_VALUES = 2**30

# Classes of a confusion-matrix figure (pictures/classification.py): beyond, its labels cannot be read at the
# figure's size and drawing 1,500 of them took minutes an epoch; the matrix is still computed, and the figure
# skipped with one line.
MAX_FIGURE_CLASSES = 100
