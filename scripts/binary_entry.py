"""The single binary's entry point (scripts/build-binary): ``mongocdc`` exactly as the installed console script."""

from mongocdc.cli import main

main()
