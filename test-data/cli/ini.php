<?php
echo ini_get('memory_limit'), " ", ini_get('precision'), "\n";
