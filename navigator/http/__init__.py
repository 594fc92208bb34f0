"""What a client wrote over HTTP, read within bounds.

Its modules:

    bodies   request bodies read no further than a bound
    numbers  whole numbers from a path segment, a query parameter, a header
"""
