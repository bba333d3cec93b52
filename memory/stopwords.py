"""English words too common to tell one memory from another ("the", "is", "what").

Keyword recall matched any word of the task, so "the" or "is" brought an earlier
chat's "The result of 17 * 23 is 391" into a question about files, and a small
model answered that instead. These words are left out of keyword searches.
Besides grammar words, the list holds the words a request to remember or recall
is made of ("remember", "tell", "recall"), which say nothing about the fact.
"""

from __future__ import annotations

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do
    does doesn't doing don't down during each few for from further had hadn't has hasn't
    have haven't having he her here hers herself him himself his how i if in into is isn't
    it its itself just let me more most my myself no nor not now of off on once only or
    other ought our ours ourselves out over own please same she should shouldn't so some
    such than that the their theirs them themselves then there these they this those
    through to too under until up very was wasn't we were weren't what when where which
    while who whom why will with won't would wouldn't you your yours yourself yourselves
    s t d ll m re ve
    also get got give make may might must need okay ok shall tell told say said
    remember remembered recall recalled know knew forget forgot
    """.split()
)
