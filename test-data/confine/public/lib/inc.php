<?php
// Included by probe.php: an include inside the document root still works when confined.
return fn (): string => 'included';
