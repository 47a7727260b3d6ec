"""The connector engine: streaming loop, acknowledgement tracking, commit order."""
