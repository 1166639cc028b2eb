# Shared build rules for C drivers. A driver's Makefile sets LAB (path of this folder),
# SRC (its own sources) and PKGS (pkg-config packages besides jansson and libcrypto), then
# includes this file. Objects go to the driver's own build/, so drivers can build in parallel.
ifeq ($(origin CC),default)
CC := gcc
endif
CFLAGS ?= -O2 -g
override CFLAGS += -Wall -Wextra -std=gnu11 -I$(LAB)
ALL_PKGS := jansson libcrypto $(PKGS)
override CFLAGS += $(shell pkg-config --cflags $(ALL_PKGS))
override LDLIBS += $(shell pkg-config --libs $(ALL_PKGS))

LAB_SRC := $(LAB)/labdriver.c $(LAB)/labjob.c $(LAB)/labbody.c
OBJ := $(patsubst %.c,build/%.o,$(notdir $(SRC) $(LAB_SRC)))
DEPS := $(wildcard $(LAB)/*.h) $(wildcard *.h)

build/driver: $(OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

build/%.o: %.c $(DEPS) | build
	$(CC) $(CFLAGS) -c -o $@ $<

build/%.o: $(LAB)/%.c $(DEPS) | build
	$(CC) $(CFLAGS) -c -o $@ $<

build:
	mkdir -p build

clean:
	rm -rf build

.PHONY: clean
