"""Results on disk and everything read from them: the layout a notebook reads without the harness (`layout`), one
writer per directory (`lock`), metrics of a run from its event log (`metrics`, `verdict`), statistics (`stats`),
reports and their tables (`report`, `tables`, `tuning`), plots, `show`, and exports to other tools' formats."""
