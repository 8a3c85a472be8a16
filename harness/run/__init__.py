"""Running: one (task x strategy x seed) cell (`runner`), failures contained to their run (`contain`), an
invocation of many cells on a results directory (`invocation`), which tasks it runs (`selection`) and what it
would cost before it spends anything (`dryrun`)."""
