"""Exports of a results directory into other tools' formats, read from its files alone.

Each format is a module of its own that imports its library (an extra) only when called:
`harness.results.exports.inspect` writes Inspect AI eval logs for `inspect view` and Inspect's dataframes.
"""
