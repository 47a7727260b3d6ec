"""The application file ``spark-submit`` runs: ``spark-submit … mongocdc/spark/entry.py <job arguments>``."""

import sys

from mongocdc.spark.job import main

if __name__ == "__main__":
    sys.exit(main())
