"""Foundations every layer may use: configuration read at the edge (`config`, `user_files`), the errors users
see (`errors`), token counting (`tokens`), the simulated clock (`clock`), read-only messages (`frozen`), JSON as
the harness writes it (`fast_json`), secrets kept out of every output (`secrets`), figures as people read them
(`numbers`)."""
