"""Agent Zero's tools run in Cadre unchanged, through a small compatibility layer.

An Agent Zero tool imports its base class as `from python.helpers.tool import
Tool, Response`, implements `async def execute(self, **kwargs)`, reads
`self.args` and returns `Response(message, break_loop)`. Cadre has no
`python` package (and its top level is fixed), so `imports.AgentZeroImports`,
a finder on `sys.meta_path`, answers the few `python.helpers.*` modules Cadre
can stand in for with the modules of this package, and refuses every other
`python.*` module with an error naming it (the tool is then unavailable, and
the model and the settings page are told why). A finder rather than a
`python/` folder: nothing is added to the top level, only names under
`python.` are ever answered, and what is offered is one explicit table.
"""
