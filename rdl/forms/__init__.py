"""The other ways to write a reservation: the JSON form and YARN's reservation JSON."""
