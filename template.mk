# The template's own targets, read by the Makefile beside it; `make new-project` leaves this file out of copies,
# whose library comes from the template's git repository instead (their pyproject.toml says which commit).
.PHONY: bench bench-scale bench-sweep gpu-check new-project

# IMAGES=1 keeps the image-folder DataModule (images.py, image_files.py, tests/test_images.py) in the copy; without
# it (or IMAGES=0) the copy's package is the digits' alone. Expanded only when new-project runs.
IMAGES_FLAG = $(if $(filter 1,$(IMAGES)),--images,$(if $(filter-out 0,$(IMAGES)),$(error IMAGES=$(IMAGES) is not a \
	choice: IMAGES=1 keeps the image-folder DataModule, IMAGES=0 or none leaves it out)))

# LICENSE=Apache-2.0 HOLDER="Jane Doe": the copy's license and holder (MIT and "The <NAME> authors" unless told).
new-project: ## this template as package NAME in a new git repository at DEST: DEST=../my-exp NAME=my_exp [IMAGES=1]
	$(PYTHON) scripts/new_project.py "$(DEST)" "$(NAME)" $(if $(LICENSE),--license "$(LICENSE)") \
		$(if $(HOLDER),--holder "$(HOLDER)") $(IMAGES_FLAG)  # quoted: a DEST with a space is one folder

bench: install ## the fit against a plain PyTorch loop and a plain Lightning script, then each part's cost (~30 min)
	$(PY) -m benchmarks.compare $(ARGS)
	$(PY) -m benchmarks.evaluation
	$(PY) -m benchmarks.parts $(PARTS_ARGS)

bench-scale: install ## samples/s, set-up time and memory on 1x, 10x and 100x the digits (~4 min)
	$(PY) -m benchmarks.scale $(ARGS)

bench-sweep: install ## sweep workers (1, 2, 4) on a journal file, SQLite and PostgreSQL: seconds for 4 tiny trials (~8 min)
	$(PY) -m benchmarks.sweep_workers $(ARGS)

gpu-check: install ## check a GPU machine in one call (<8 min): GPU tests, fits, samples/s; ARGS=--cpu without one
	$(PY) -m benchmarks.gpu_check $(ARGS)

