"""The single binary's entry point (scripts/build-binary): ``mongocdc`` exactly as the installed console script.

PyInstaller's bootloader starts this process with ``LD_LIBRARY_PATH`` set to the directory it unpacked the
bundled libraries into. The dynamic loader read it at this process's start; programs mongocdc starts
(``spark-submit`` and its JVM, a Python with ``mongocdc[spark]``, ``java -version``) must load their own
libraries, not the bundled OpenSSL, zlib or libpython, so they get the variable as the user had it.
"""

import os

_original = os.environ.pop("LD_LIBRARY_PATH_ORIG", None)
if _original is None:
    os.environ.pop("LD_LIBRARY_PATH", None)
else:
    os.environ["LD_LIBRARY_PATH"] = _original

from mongocdc.cli import main  # noqa: E402

main()
