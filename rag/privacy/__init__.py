"""Personal data in German text: check digits and the Match record (checks), addresses, names, finding (detect) and masking (mask)."""
