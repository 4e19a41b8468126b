"""Kafka brokers and changelog topics: real brokers for the changelog and system tests.

Above the stores: nothing in ``kstate.codecs`` or ``kstate.stores`` imports from here.
"""
