"""Backups of `usr/`: the chosen parts into a zip, and back, all or nothing.

`parts` says what a backup is made of (and what counts as a secret),
`make` writes one, `check` reads one without unpacking it, `stage` unpacks
and checks it beside `usr/`, `swap` puts it in place (or puts everything
back), `restore` ties them together and previews, `cli` is
`python3 cadre.py backup|restore`.
"""
