<?php

function my_autoloader(string $class) {
}
spl_autoload_register('my_autoloader');
