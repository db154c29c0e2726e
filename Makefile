# Two commands for a fresh machine (see README):  make demo   |   make test
# Both set everything up first, idempotently: Debian build tools if missing, a venv with ROS 2
# from PyPI wheels and every other dependency, and this package (messages + nodes) built into it.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
DEPS_STAMP := $(VENV)/.deps-installed
PKG_STAMP := $(VENV)/.package-installed
PKG_SOURCES := CMakeLists.txt package.xml pyproject.toml $(wildcard msg/*.msg srv/*.srv) \
	$(shell find edge_roofline launch config -type f -not -path '*/__pycache__/*' 2>/dev/null)
# Loopback-only DDS and fast discovery for everything started from here.
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST
export ROS_LOCALHOST_ONLY := 1
export FASTDDS_DEFAULT_PROFILES_FILE := $(CURDIR)/config/fastdds_localhost.xml

.PHONY: setup test demo clean system-deps

setup: $(PKG_STAMP)

# Debian/Ubuntu packages needed to build the messages (cmake, a C/C++ compiler, venv), and
# headless Chromium, which the tests use to render the sweep's HTML report.
system-deps:
	@missing=""; \
	command -v cmake >/dev/null || missing="$$missing cmake"; \
	command -v g++ >/dev/null || missing="$$missing g++"; \
	command -v gcc >/dev/null || missing="$$missing gcc"; \
	$(PYTHON) -c "import ensurepip, venv" 2>/dev/null || missing="$$missing python3-venv"; \
	$(PYTHON) -c "import sysconfig,os,sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'],'Python.h')))" || missing="$$missing python3-dev"; \
	command -v chromium >/dev/null || command -v chromium-browser >/dev/null || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$missing; \
	fi

$(PY): | system-deps
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(DEPS_STAMP): requirements.txt | $(PY)
	$(PY) -m pip install -q -r requirements.txt
	touch $@

$(PKG_STAMP): $(DEPS_STAMP) $(PKG_SOURCES)
	$(PY) -m pip install -q --no-build-isolation .
	touch $@

test: setup
	$(PY) -m pytest test -q -p no:cacheprovider

demo: setup
	$(VENV)/bin/edge-roofline demo

clean:
	rm -rf build $(VENV)
