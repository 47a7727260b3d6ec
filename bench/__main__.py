"""``python -m bench``: run the benchmarks (see ``bench/README.md``)."""

from bench.run import main

raise SystemExit(main())
