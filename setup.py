"""pip build entry: `pip install .` builds the ROS package with the same CMakeLists.txt that
colcon uses (messages, services, the Python package, the node executables and share/) and ships
CMake's install tree in the wheel: the Python part in site-packages, the rest (lib/*.so,
lib/edge_roofline/<node>, share/edge_roofline) in the venv prefix, which the PyPI ROS wheels
treat as their ROS prefix.

Setuptools drives CMake directly (configure, build, `cmake --install` into a staging DESTDIR)
instead of a CMake build backend: no experimental absolute wheel install dir, nothing to
install before pip can read the metadata, and the build runs against the interpreter pip
installs into (whose venv holds the ROS build tools, requirements/ros-<distro>-build.txt).

Dependencies come from requirements/: runtime.txt -> install_requires, ros-<distro>.txt ->
the `<distro>` extra, test.txt -> the `test` extra.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Command, setup
from setuptools.command.build import build
from setuptools.dist import Distribution

from distutils.command.install_data import install_data  # setuptools' own distutils (imported above)

ROOT = Path(__file__).resolve().parent
REQUIREMENTS = ROOT / "requirements"
DISTROS = ("jazzy", "kilted")


def read_requirements(name: str) -> list[str]:
    """Requirement lines of requirements/<name> (pip options and -r includes left out)."""
    lines = (line.split("#", 1)[0].strip() for line in (REQUIREMENTS / name).read_text().splitlines())
    return [line for line in lines if line and not line.startswith("-")]


def _staged_site_packages() -> Path:
    """The Python install dir ament chose (lib/pythonX.Y/site-packages) inside the staged prefix."""
    return next(staged_prefix().glob("lib/python3*/site-packages"))


def _build_dir() -> Path:
    # One build dir per target venv: a Jazzy and a Kilted venv never share a CMake cache.
    return ROOT / "build" / "pip" / hashlib.sha256(sys.prefix.encode()).hexdigest()[:10]


def staged_prefix() -> Path:
    """Where `cmake --install` puts the venv prefix's files under the staging DESTDIR."""
    return _build_dir() / "stage" / Path(sys.prefix).relative_to(Path(sys.prefix).anchor)


class BuildRosPackage(Command):
    """Configure, build and install the package into a staging DESTDIR, then put the Python part
    (our package next to the generated msg/srv code) where the wheel's site-packages is built.

    The install prefix is the venv (sys.prefix) itself, so the files CMake writes that name their
    prefix (ament hooks, the executables' shebangs) are right once pip copies them there."""

    description = "build the ROS package with CMake"
    user_options: list = []

    def initialize_options(self) -> None:
        self.build_lib = None

    def finalize_options(self) -> None:
        self.set_undefined_options("build", ("build_lib", "build_lib"))

    def run(self) -> None:
        if not (Path(sys.prefix) / "share" / "ament_cmake").is_dir() and "AMENT_PREFIX_PATH" not in os.environ:
            raise SystemExit(f"edge_roofline: no ROS 2 build tools in {sys.prefix}: pip install -r "
                             "requirements/ros-jazzy-build.txt first (or ros-kilted-build.txt; `make setup` does "
                             "it), or source a ROS 2 install")
        build_dir = _build_dir()
        shutil.rmtree(build_dir / "stage", ignore_errors=True)
        env = dict(os.environ)
        # pip's isolated build env hides the venv's site-packages through PYTHONPATH; the ROS
        # generators CMake runs must see the venv's own packages (the ROS wheels, numpy).
        env.pop("PYTHONPATH", None)
        env.pop("PYTHONNOUSERSITE", None)
        env.setdefault("AMENT_PREFIX_PATH", sys.prefix)  # typesupport discovery reads it at configure time
        subprocess.run(
            ["cmake", "-S", str(ROOT), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
             f"-DCMAKE_INSTALL_PREFIX={sys.prefix}", f"-DCMAKE_PREFIX_PATH={sys.prefix}",
             f"-DPython3_EXECUTABLE={sys.executable}", "-DBUILD_TESTING=OFF"],
            check=True, env=env)
        subprocess.run(["cmake", "--build", str(build_dir), "--parallel", str(os.cpu_count() or 1)],
                       check=True, env=env)
        subprocess.run(["cmake", "--install", str(build_dir)], check=True,
                       env={**env, "DESTDIR": str(build_dir / "stage")})
        # build_lib survives between builds: a module deleted or moved in the source must not ship.
        shutil.rmtree(self.build_lib, ignore_errors=True)
        shutil.copytree(_staged_site_packages(), self.build_lib)


class BuildWithCMake(build):
    sub_commands = [("build_ros_package", None)] + build.sub_commands


class InstallDataFromCMake(install_data):
    """Everything else CMake installed goes to the prefix (a wheel's .data/data), modes kept."""

    def run(self) -> None:
        staged = staged_prefix()
        python_dir = _staged_site_packages()
        for path in sorted(staged.rglob("*")):
            if path.is_dir() or python_dir in path.parents:
                continue
            target = Path(self.install_dir) / path.relative_to(staged)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
            self.outfiles.append(str(target))


class RosPackageDistribution(Distribution):
    """Platform wheel (compiled typesupport libraries) with prefix data (install_data always runs)."""

    def has_ext_modules(self) -> bool:
        return True

    def has_data_files(self) -> bool:
        return True


setup(
    distclass=RosPackageDistribution,
    packages=[],
    py_modules=[],
    cmdclass={"build": BuildWithCMake, "build_ros_package": BuildRosPackage, "install_data": InstallDataFromCMake},
    install_requires=read_requirements("runtime.txt"),
    extras_require={**{distro: read_requirements(f"ros-{distro}.txt") for distro in DISTROS},
                    "test": read_requirements("test.txt")},
)
