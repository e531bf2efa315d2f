# Public headers: ringpoint.h and the parts it includes.
include_HEADERS = include/ringpoint.h
ringpointincludedir = $(includedir)/ringpoint
ringpointinclude_HEADERS = \
	include/ringpoint/api.h \
	include/ringpoint/ckpt.h \
	include/ringpoint/coll.h \
	include/ringpoint/cuda.h \
	include/ringpoint/context.h \
	include/ringpoint/status.h \
	include/ringpoint/subcomm.h \
	include/ringpoint/types.h
nodist_ringpointinclude_HEADERS = include/ringpoint/version.h
