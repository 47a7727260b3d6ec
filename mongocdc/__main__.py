"""``python -m mongocdc``."""

from mongocdc.cli import main

if __name__ == "__main__":
    main()
