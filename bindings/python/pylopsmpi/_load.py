"""Load the C library this package was built for, before the cffi module that needs it.

The compiled module pylopsmpi._plm carries no run path: `_libdir.py` (written by CMake into the
build tree, and again at install time with the installed library) names the library file, and
loading it first lets the dynamic linker resolve _plm's dependency by its SONAME. The package
therefore works from the build tree, from `<prefix>/share/pylopsmpi/python` and after `pip
install` copies it into a virtual environment. Without `_libdir.py`, or when the file it names is
gone, the system's search path (LD_LIBRARY_PATH, ldconfig) finds the library.
"""
import ctypes
import os

try:
    from ._libdir import LIBRARY
except ImportError:       # pragma: no cover - a package assembled by hand
    LIBRARY = None

if LIBRARY and os.path.exists(LIBRARY):
    ctypes.CDLL(LIBRARY, mode=ctypes.RTLD_GLOBAL)
