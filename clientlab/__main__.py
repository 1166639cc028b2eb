from clientlab.cli import entry

entry()
