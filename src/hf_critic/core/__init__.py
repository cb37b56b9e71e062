"""The ground floor every other package stands on: the exception tree (:mod:`.errors`), the record schema, the label
vocabulary, which rows of two files are the same rows, the YAML keys hf-critic reads, control tokens, redaction of
secrets and progress bars."""
