<?php

require __DIR__ . '/vendor/autoload.php';

echo App\App::run(), "\n";
