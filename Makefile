# Two commands for a fresh machine (see README):  make demo   |   make test
# Both set everything up first, idempotently: Debian build tools if missing, a venv with ROS 2
# from PyPI wheels and every other dependency, and this package (messages + nodes) built into it.

PYTHON ?= python3
# The ROS 2 distro the venv gets from PyPI wheels: jazzy (LTS, default) or kilted. Each distro
# has its own venv. A shell with a system ROS sourced sets ROS_DISTRO too (e.g. humble): that
# path is colcon (README), so pass ROS_DISTRO=jazzy to use the wheels anyway.
ROS_DISTRO ?= jazzy
PIP_DISTROS := jazzy kilted
VENV ?= $(if $(filter jazzy,$(ROS_DISTRO)),.venv,.venv-$(ROS_DISTRO))
PY := $(VENV)/bin/python
DEPS_STAMP := $(VENV)/.deps-installed
PKG_STAMP := $(VENV)/.package-installed
REQUIREMENTS := requirements/ros-$(ROS_DISTRO)-build.txt requirements/runtime.txt requirements/test.txt
PKG_SOURCES := CMakeLists.txt package.xml pyproject.toml setup.py $(wildcard requirements/*.txt msg/*.msg srv/*.srv) \
	$(shell find edge_roofline launch config -type f -not -path '*/__pycache__/*' 2>/dev/null)
# Loopback-only DDS for everything started from here (the Fast DDS profile: suite/env.py).
export ROS_AUTOMATIC_DISCOVERY_RANGE := LOCALHOST
unexport ROS_LOCALHOST_ONLY  # deprecated since Jazzy (warns; Humble is built with colcon)

.PHONY: setup test test-kilted demo clean system-deps check-distro ros2-tools

setup: $(PKG_STAMP)

check-distro:
	@case " $(PIP_DISTROS) " in *" $(ROS_DISTRO) "*) ;; *) \
	  echo "ROS_DISTRO=$(ROS_DISTRO) has no PyPI wheels here (pip path: $(PIP_DISTROS));" \
	    "build it with colcon (README) or pass ROS_DISTRO=jazzy"; \
	  exit 2;; esac

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

$(PY): | check-distro system-deps
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(DEPS_STAMP): $(wildcard requirements/*.txt) | $(PY)
	$(PY) -m pip install -q $(addprefix -r ,$(REQUIREMENTS))
	touch $@

$(PKG_STAMP): $(DEPS_STAMP) $(PKG_SOURCES)
	$(PY) -m pip install -q --no-build-isolation .
	touch $@

# The ROS 2 launch system and `ros2` CLI for the tests that run them as users do: wheels from
# shared/ros2-tools beside the checkout (a user's clone has none: those tests skip, saying so;
# EDGE_ROOFLINE_ROS2_TOOLS=DIR names another). Installed once per version (test/suite/ros2_tools.py).
ros2-tools: setup
	$(PY) -m test.suite.ros2_tools

# On Jazzy (the default) the whole suite, then the Kilted job; on another distro its suite only.
test: setup ros2-tools
	$(PY) -m pytest test -q -p no:cacheprovider
ifeq ($(ROS_DISTRO),jazzy)
	$(MAKE) test-kilted
endif

# The second distro's smaller job: every message between processes and one node, on a Kilted
# venv (~3 min more the first time, ~30 s after; see docs/packaging.md).
KILTED_TESTS := test/nodes/test_messages.py test/nodes/test_power_monitor_node.py
test-kilted:
	$(MAKE) ROS_DISTRO=kilted setup
	.venv-kilted/bin/python -m pytest $(KILTED_TESTS) -q -p no:cacheprovider

# make demo DEVICE=agx_thor_t5000: the demo on another virtual Jetson (edge-roofline demo --device)
demo: setup
	$(VENV)/bin/edge-roofline demo $(if $(DEVICE),--device $(DEVICE))

clean:
	rm -rf build .venv .venv-*
