# The Python package: ringpoint (NumPy) and ringpoint.torch (PyTorch,
# Horovod's API), pure Python over ctypes. Installed for the interpreter
# configure chose (--with-python), with the path of the installed
# libringpoint written into ringpoint/_config.py, so that no
# LD_LIBRARY_PATH is needed.
RP_PY_SOURCES = python/ringpoint/__init__.py python/ringpoint/_coll.py \
	python/ringpoint/_dtypes.py python/ringpoint/_errors.py \
	python/ringpoint/_lib.py python/ringpoint/_numpy.py \
	python/ringpoint/_runtime.py
RP_PY_TORCH_SOURCES = python/ringpoint/torch/__init__.py \
	python/ringpoint/torch/checkpoint.py python/ringpoint/torch/data.py \
	python/ringpoint/torch/_state.py python/ringpoint/torch/export.py \
	python/ringpoint/torch/compression.py python/ringpoint/torch/ddp.py \
	python/ringpoint/torch/functions.py python/ringpoint/torch/mpi_ops.py \
	python/ringpoint/torch/exchange.py python/ringpoint/torch/_pset.py \
	python/ringpoint/torch/optimizer.py \
	python/ringpoint/torch/sync_batch_norm.py python/ringpoint/torch/elastic.py
EXTRA_DIST += $(RP_PY_SOURCES) $(RP_PY_TORCH_SOURCES) python/tests

if HAVE_PYTHON
rppydir = $(RP_PYTHONDIR)/ringpoint
rppy_DATA = $(RP_PY_SOURCES) python/ringpoint/_config.py
rppytorchdir = $(RP_PYTHONDIR)/ringpoint/torch
rppytorch_DATA = $(RP_PY_TORCH_SOURCES)
CLEANFILES += python/ringpoint/_config.py

python/ringpoint/_config.py: Makefile
	$(AM_V_GEN)$(MKDIR_P) python/ringpoint && { \
	echo '"""Written by make install: where the installed library lives."""'; \
	echo 'LIBRINGPOINT = "$(libdir)/libringpoint.so.0"'; \
	echo 'GPU_MODULE = "$(pkglibdir)/ringpoint-nccl.so"'; \
	echo 'PYTHON = "$(RP_PYTHON)"'; \
	} > $@.tmp && mv $@.tmp $@

# Byte-compile after installing (as Debian's packages do), and drop the
# cache again on uninstall so that the directories are left empty.
install-python-hook:
	-$(RP_PYTHON) -m compileall -q "$(DESTDIR)$(rppydir)" >/dev/null 2>&1
uninstall-python-hook:
	-rm -rf "$(DESTDIR)$(rppydir)/__pycache__" "$(DESTDIR)$(rppytorchdir)/__pycache__"
else
install-python-hook:
uninstall-python-hook:
endif
install-data-hook: install-python-hook
uninstall-hook: uninstall-python-hook

# The PyTorch example job (the demo's, with Checkpoint) is installed beside
# the C examples; its tests run it from the source tree.
dist_examples_DATA += contrib/examples/train_torch.py
EXTRA_DIST += tests/python/ckpt_cases.py tests/python/state_dict_bounds.py \
	tests/slurm/test_torch_ckpt.sh
