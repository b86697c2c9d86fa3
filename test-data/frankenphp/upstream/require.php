<?php

// dummy require file for opcache_reset test
return function (){
    echo "";
};
