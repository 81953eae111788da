version = '1.22.3'
