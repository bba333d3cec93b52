"""What the model says back: its reply streamed into the log as it comes, held to a
schema where the model takes one, parsed tolerantly into a tool call, and what is
told to the model when a reply cannot be used (repairs, the loop guard)."""
