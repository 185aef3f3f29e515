/* test_classify.c - the click classifier. First a labelled table of real user
 * agents (browsers on every platform, in-app browsers, crawlers, AI crawlers,
 * previewers, HTTP libraries, headless browsers, monitors, mail scanners,
 * empty ones) with the kind, device, browser and OS each must give; the issue
 * allows at most one row wrong, and the test reports every wrong row. Then
 * the cache, prefetch headers, referrers, languages, UTM values and the UTF-8
 * clamp. The strings come from the browsers and bots themselves (many via
 * the isbot project's fixtures); they are what a real request carries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clicks/classify.h"
#include "clicks/dayrow.h"
#include "base/err.h"
#include "base/log.h"
#include "test.h"

#include "base/banned.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const struct ua_case {
    const char *ua;
    enum bot_kind bot;
    enum device device;
    const char *browser;
    const char *os;
} ua_cases[] = {
/* clang-format off */
#define PERSON(ua, dev, br, os) {ua, BOT_NONE, dev, br, os}
#define BOT(ua, kind) {ua, kind, DEV_BOT, "Other", "Other"}
    /* clang-format on */
    /* Desktop browsers */
    PERSON("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/124.0.0.0 Safari/537.36",
           DEV_DESKTOP, "Chrome", "Windows"),
    PERSON("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/124.0.0.0 Safari/537.36",
           DEV_DESKTOP, "Chrome", "macOS"),
    PERSON("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/124.0.0.0 Safari/537.36",
           DEV_DESKTOP, "Chrome", "Linux"),
    PERSON("Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/124.0.0.0 Safari/537.36",
           DEV_DESKTOP, "Chrome", "ChromeOS"),
    PERSON("Mozilla/5.0 (X11; CrOS x86_64 13904.66.0) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/91.0.4472.114 Safari/537.36",
           DEV_DESKTOP, "Chrome", "ChromeOS"),
    PERSON("Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0",
           DEV_DESKTOP, "Firefox", "Windows"),
    PERSON("Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:125.0) Gecko/20100101 Firefox/125.0",
           DEV_DESKTOP, "Firefox", "macOS"),
    PERSON("Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0", DEV_DESKTOP,
           "Firefox", "Linux"),
    PERSON("Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:109.0) Gecko/20100101 Firefox/115.0",
           DEV_DESKTOP, "Firefox", "Linux"),
    PERSON("Mozilla/5.0 (Windows NT 6.1; Win64; x64; rv:109.0) Gecko/20100101 Firefox/115.0",
           DEV_DESKTOP, "Firefox", "Windows"),
    PERSON("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like "
           "Gecko) Version/17.4.1 Safari/605.1.15",
           DEV_DESKTOP, "Safari", "macOS"),
    PERSON("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_14_5) AppleWebKit/605.1.15 (KHTML, like "
           "Gecko) Version/12.1.1 Safari/605.1.15",
           DEV_DESKTOP, "Safari", "macOS"),
    PERSON("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/124.0.0.0 Safari/537.36 Edg/124.0.0.0",
           DEV_DESKTOP, "Edge", "Windows"),
    PERSON("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_6) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/81.0.4044.92 Safari/537.36 Edg/81.0.416.45",
           DEV_DESKTOP, "Edge", "macOS"),
    PERSON("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/64.0.3282.140 Safari/537.36 Edge/17.17134",
           DEV_DESKTOP, "Edge", "Windows"),
    PERSON("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/122.0.0.0 Safari/537.36 OPR/108.0.0.0",
           DEV_DESKTOP, "Opera", "Windows"),
    PERSON("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_12_6) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/79.0.3945.130 Safari/537.36 OPR/66.0.3515.72",
           DEV_DESKTOP, "Opera", "macOS"),
    PERSON("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/65.0.3325.183 Safari/537.36 Vivaldi/1.96.1137.3",
           DEV_DESKTOP, "Chrome", "Linux"),
    PERSON("Mozilla/5.0 (X11; Linux i686) AppleWebKit/537.36 (KHTML, like Gecko) Ubuntu "
           "Chromium/65.0.3325.181 Chrome/65.0.3325.181 Safari/537.36",
           DEV_DESKTOP, "Chrome", "Linux"),
    PERSON("Mozilla/5.0 (Windows NT 6.3; WOW64; Trident/7.0; TNJB; rv:11.0) like Gecko",
           DEV_DESKTOP, "Internet Explorer", "Windows"),
    PERSON("Mozilla/5.0 (Windows NT 10.0.18362; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Slack/4.4.2 Chrome/78.0.3904.130 Electron/7.2.1 Safari/537.36 WindowsStore/10.0.18362 "
           "Sonic Slack_SSB/4.4.2",
           DEV_DESKTOP, "Chrome", "Windows"),
    PERSON("Mozilla/5.0 (Windows NT 6.1) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/59.0.3071.125 YaBrowser/17.7.1.791 Yowser/2.5 Safari/537.36",
           DEV_DESKTOP, "Chrome", "Windows"),

    /* Phones */
    PERSON("Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/124.0.0.0 Mobile Safari/537.36",
           DEV_MOBILE, "Chrome", "Android"),
    PERSON("Mozilla/5.0 (Linux; Android 13; Pixel 6) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/104.0.0.0 Mobile Safari/537.36",
           DEV_MOBILE, "Chrome", "Android"),
    PERSON("Mozilla/5.0 (Linux; Android 9; SAMSUNG SM-G960U) AppleWebKit/537.36 (KHTML, like "
           "Gecko) SamsungBrowser/10.2 Chrome/71.0.3578.99 Mobile Safari/537.36",
           DEV_MOBILE, "Samsung Internet", "Android"),
    PERSON("Mozilla/5.0 (Linux; Android 7.0; SAMSUNG SM-G610M Build/NRD90M) AppleWebKit/537.36 "
           "(KHTML, like Gecko) SamsungBrowser/7.4 Chrome/59.0.3071.125 Mobile Safari/537.36",
           DEV_MOBILE, "Samsung Internet", "Android"),
    PERSON("Mozilla/5.0 (Android 14; Mobile; rv:125.0) Gecko/125.0 Firefox/125.0", DEV_MOBILE,
           "Firefox", "Android"),
    PERSON("Mozilla/5.0 (Linux; U; Android 5.0.2; zh-CN; Redmi Note 3 Build/LRX22G) "
           "AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 OPR/11.2.3.102637 Mobile "
           "Safari/537.36",
           DEV_MOBILE, "Opera", "Android"),
    PERSON("Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/124.0.0.0 Mobile Safari/537.36 EdgA/124.0.0.0",
           DEV_MOBILE, "Edge", "Android"),
    PERSON("Mozilla/5.0 (iPhone; CPU iPhone OS 17_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
           "like Gecko) Version/17.4.1 Mobile/15E148 Safari/604.1",
           DEV_MOBILE, "Safari", "iOS"),
    PERSON("Mozilla/5.0 (iPhone; CPU iPhone OS 13_2_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
           "like Gecko) Version/13.0.3 Mobile/15E148 Safari/604.1",
           DEV_MOBILE, "Safari", "iOS"),
    PERSON("Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
           "like Gecko) CriOS/124.0.6367.88 Mobile/15E148 Safari/604.1",
           DEV_MOBILE, "Chrome", "iOS"),
    PERSON("Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
           "like Gecko) FxiOS/125.0 Mobile/15E148 Safari/605.1.15",
           DEV_MOBILE, "Firefox", "iOS"),
    PERSON("Mozilla/5.0 (iPhone; CPU iPhone OS 13_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
           "like Gecko) Version/13.0 EdgiOS/44.10.19 Mobile/15E148 Safari/605.1.15",
           DEV_MOBILE, "Edge", "iOS"),
    PERSON("Mozilla/5.0 (iPhone; CPU iPhone OS 12_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
           "like Gecko) OPT/5 Mobile/16B92",
           DEV_MOBILE, "Opera", "iOS"),
    PERSON("Mozilla/5.0 (iPhone; CPU iPhone OS 13_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
           "like Gecko) GSA/102.0.304944559 Mobile/15E148 Safari/604.1",
           DEV_MOBILE, "Safari", "iOS"),
    PERSON("Mozilla/5.0 (iPhone; CPU iPhone OS 17_2_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
           "like Gecko) Version/17.2 Mobile/15E148 Safari/605.1 NAVER(inapp; search; 2000; 12.3.6; "
           "14PRO)",
           DEV_MOBILE, "Safari", "iOS"),
    PERSON("Mozilla/5.0 (Windows Phone 10.0; Android 6.0.1; Microsoft; Lumia 650) "
           "AppleWebKit/537.36 (KHTML, like Gecko) Chrome/52.0.2743.116 Mobile Safari/537.36 "
           "Edge/15.15254",
           DEV_MOBILE, "Edge", "Windows"),
    PERSON("Mozilla/5.0 (Linux; Android 10; MAR-LX3A; HMSCore 6.12.4.311; GMSCore 23.48.16) "
           "AppleWebKit/537.36 (KHTML, like Gecko) Chrome/99.0.4844.88 HuaweiBrowser/14.0.2.311 "
           "Mobile Safari/537.36",
           DEV_MOBILE, "Chrome", "Android"),
    PERSON("Mozilla/5.0 (Linux; U; Android 9; pl-pl; Redmi Note 7 Build/PKQ1.180904.001) "
           "AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/71.0.3578.141 Mobile "
           "Safari/537.36 XiaoMi/MiuiBrowser/11.4.3-g",
           DEV_MOBILE, "Chrome", "Android"),
    PERSON("Mozilla/5.0 (Linux; U; Android 6.0.1; zh-CN; F5121 Build/34.0.A.1.247) "
           "AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/40.0.2214.89 "
           "UCBrowser/11.5.1.944 Mobile Safari/537.36",
           DEV_MOBILE, "Chrome", "Android"),
    PERSON("Mozilla/5.0 (Linux; Android 6.0.1; SM-G532M Build/MMB29T; wv) AppleWebKit/537.36 "
           "(KHTML, like Gecko) Version/4.0 Chrome/88.0.4324.181 Mobile Safari/537.36 "
           "GoogleApp/12.4.9.23.arm",
           DEV_MOBILE, "Chrome", "Android"),
    PERSON("Mozilla/5.0 (Linux; Android 14; Pixel 6 Build/UPB3.230519.014) AppleWebKit/537.36 "
           "(KHTML, like Gecko) Version/4.0 Chrome/115.0.5790.21 Mobile Safari/537.36 GNews "
           "Android/2022137898",
           DEV_MOBILE, "Chrome", "Android"),

    /* Tablets */
    PERSON("Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
           "CriOS/124.0.6367.88 Mobile/15E148 Safari/604.1",
           DEV_TABLET, "Chrome", "iPadOS"),
    PERSON("Mozilla/5.0 (iPad; CPU OS 12_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
           "Gecko) Version/12.1.2 Mobile/15E148 Safari/604.1",
           DEV_TABLET, "Safari", "iPadOS"),
    PERSON("Mozilla/5.0 (iPad; CPU OS 12_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
           "Gecko) OPT/1.11.0 Mobile/15E148",
           DEV_TABLET, "Opera", "iPadOS"),
    PERSON("Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/124.0.0.0 Safari/537.36",
           DEV_TABLET, "Chrome", "Android"),
    PERSON("Mozilla/5.0 (Linux; Android 5.1.1; KFSUWI) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Silk/80.5.3 like Chrome/80.0.3987.162 Safari/537.36",
           DEV_TABLET, "Chrome", "Android"),
    PERSON("Mozilla/5.0 (Android 14; Tablet; rv:125.0) Gecko/125.0 Firefox/125.0", DEV_TABLET,
           "Firefox", "Android"),
    PERSON("Mozilla/5.0 (Linux; Android 4.4.2; BN NookHD+ Build/KOT49H) AppleWebKit/537.36 (KHTML, "
           "like Gecko) Version/4.0 Chrome/30.0.0.0 Safari/537.36",
           DEV_TABLET, "Chrome", "Android"),
    PERSON("Mozilla/5.0 (Linux; Android 5.1.1; KFDOWI Build/LVY48F; wv) AppleWebKit/537.36 (KHTML, "
           "like Gecko) Version/4.0 Chrome/70.0.3538.110 Safari/537.36 [Pinterest/Android]",
           DEV_TABLET, "Pinterest", "Android"),
    PERSON("Mozilla/5.0 (iPad; CPU OS 13_3_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
           "Gecko) Version/13.0.5 Mobile/15E148 Snapchat/10.77.0.54 (like Safari/604.1)",
           DEV_TABLET, "Snapchat", "iPadOS"),

    /* Televisions and consoles */
    PERSON("Mozilla/5.0 (PlayStation 4 5.55) AppleWebKit/601.2 (KHTML, like Gecko)", DEV_OTHER,
           "Other", "Other"),
    PERSON("Mozilla/5.0 (SMART-TV; X11; Linux armv7l) AppleWebKit/537.42 (KHTML, like Gecko) "
           "Chromium/25.0.1349.2 Chrome/25.0.1349.2 Safari/537.42",
           DEV_OTHER, "Chrome", "Linux"),

    /* In-app browsers: people, not bots */
    PERSON("Mozilla/5.0 (iPhone; CPU iPhone OS 13_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
           "like Gecko) Mobile/15E148 Instagram 123.1.0.26.115 (iPhone11,8; iOS 13_3; en_US; "
           "en-US; scale=2.00; 828x1792; 190542906)",
           DEV_MOBILE, "Instagram", "iOS"),
    PERSON("Mozilla/5.0 (Linux; Android 11; Pixel 2 Build/RP1A.201005.004.A1; wv) "
           "AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/91.0.4472.120 Mobile "
           "Safari/537.36 Instagram 194.0.0.36.172 Android (30/11; 420dpi; 1080x1878; "
           "Google/google; Pixel 2; walleye; walleye; en_US; 301484483)",
           DEV_MOBILE, "Instagram", "Android"),
    PERSON("Mozilla/5.0 (iPhone; CPU iPhone OS 11_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
           "like Gecko) Mobile/15G77 [FBAN/FBIOS;FBAV/183.0.0.41.81;FBBV/119182652;"
           "FBDV/iPhone6,2;FBMD/iPhone;FBSN/iOS;FBSV/11.4.1;FBSS/2;FBCR/VIVO;FBID/phone;"
           "FBLC/pt_BR;FBOP/5;FBRV/0]",
           DEV_MOBILE, "Facebook", "iOS"),
    PERSON("Mozilla/5.0 (iPhone; CPU iPhone OS 13_3_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
           "like Gecko) Mobile/15E148 [FBAN/FBIOS;FBDV/iPhone11,8;FBMD/iPhone;FBSN/iOS;"
           "FBSV/13.3.1;FBSS/2;FBID/phone;FBLC/en_US;FBOP/5;FBCR/]",
           DEV_MOBILE, "Facebook", "iOS"),
    PERSON("Mozilla/5.0 (Linux; Android 9; SM-G950U Build/PPR1.180610.011; wv) AppleWebKit/537.36 "
           "(KHTML, like Gecko) Version/4.0 Chrome/80.0.3987.149 Mobile Safari/537.36 "
           "[FB_IAB/FB4A;FBAV/263.0.0.46.121;]",
           DEV_MOBILE, "Facebook", "Android"),
    PERSON("Mozilla/5.0 (iPhone; CPU iPhone OS 12_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
           "like Gecko) Mobile/15E148 [LinkedInApp]",
           DEV_MOBILE, "LinkedIn", "iOS"),
    PERSON("Mozilla/5.0 (Linux; Android 13; SM-S911B Build/TP1A.220624.014; wv) AppleWebKit/537.36 "
           "(KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.144 Mobile Safari/537.36 "
           "[LinkedInApp]/9.29.8962",
           DEV_MOBILE, "LinkedIn", "Android"),
    PERSON("Mozilla/5.0 (Linux; Android 10; SM-G973F Build/QQ3A.200805.001; wv) AppleWebKit/537.36 "
           "(KHTML, like Gecko) Version/4.0 Chrome/85.0.4183.101 Mobile Safari/537.36 "
           "trill_2021806060 JsSdk/1.0 NetType/WIFI Channel/googleplay AppName/musical_ly "
           "app_version/18.6.6 ByteLocale/fr ByteFullLocale/fr Region/FR",
           DEV_MOBILE, "TikTok", "Android"),
    PERSON("Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
           "like Gecko) Mobile/15E148 musical_ly_34.1.0 JsSdk/2.0 NetType/WIFI Channel/App Store "
           "ByteLocale/en Region/US ByteFullLocale/en isDarkMode/0 WKWebView/1 "
           "BytedanceWebview/d8a21c6",
           DEV_MOBILE, "TikTok", "iOS"),
    PERSON("Mozilla/5.0 (iPhone; CPU iPhone OS 14_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
           "like Gecko) Version/14.1.1 Mobile/15E148 Snapchat/11.36.0.36 (like Safari/604.1)",
           DEV_MOBILE, "Snapchat", "iOS"),
    PERSON("Mozilla/5.0 (Linux; Android 10; SM-G973U Build/QP1A.190711.020; wv) AppleWebKit/537.36 "
           "(KHTML, like Gecko) Version/4.0 Chrome/79.0.3945.136 Mobile Safari/537.36"
           "Snapchat10.74.6.0 (SM-G973U; Android 10#G973USQS2CSL1#29; gzip)",
           DEV_MOBILE, "Snapchat", "Android"),
    PERSON("Mozilla/5.0 (Linux; Android 9; STF-L09 Build/HUAWEISTF-L09; wv) AppleWebKit/537.36 "
           "(KHTML, like Gecko) Version/4.0 Chrome/79.0.3945.79 Mobile Safari/537.36 "
           "[Pinterest/Android]",
           DEV_MOBILE, "Pinterest", "Android"),
    PERSON("Mozilla/5.0 (iPhone; CPU iPhone OS 13_3_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
           "like Gecko) Mobile/17D50 Twitter for iPhone/8.10",
           DEV_MOBILE, "Twitter", "iOS"),
    PERSON("Mozilla/5.0 (Linux; Android 7.0; FRD-AL00 Build/HUAWEIFRD-AL00; wv) AppleWebKit/537.36 "
           "(KHTML, like Gecko) Version/4.0 Chrome/53.0.2785.49 Mobile MQQBrowser/6.2 TBS/043602 "
           "Safari/537.36 MicroMessenger/6.5.16.1120 NetType/WIFI Language/zh_CN",
           DEV_MOBILE, "WeChat", "Android"),
    PERSON("Mozilla/5.0 (iPhone; CPU iPhone OS 10_3_3 like Mac OS X) AppleWebKit/603.3.8 (KHTML, "
           "like Gecko) Mobile/14G60 wxwork/2.1.5 MicroMessenger/6.3.22",
           DEV_MOBILE, "WeChat", "iOS"),
    PERSON("Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
           "like Gecko) Mobile/15E148 Safari Line/14.5.0",
           DEV_MOBILE, "Line", "iOS"),

    /* Search crawlers */
    BOT("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", BOT_CRAWLER),
    BOT("Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 (KHTML, like "
        "Gecko) Chrome/80.0.3987.92 Mobile Safari/537.36 (compatible; Googlebot/2.1; "
        "+http://www.google.com/bot.html)",
        BOT_CRAWLER),
    BOT("AdsBot-Google (+http://www.google.com/adsbot.html)", BOT_CRAWLER),
    BOT("Mozilla/5.0 (compatible; Google-InspectionTool/1.0)", BOT_CRAWLER),
    BOT("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", BOT_CRAWLER),
    BOT("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; "
        "+http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36",
        BOT_CRAWLER),
    BOT("Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)",
        BOT_CRAWLER),
    BOT("Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)", BOT_CRAWLER),
    BOT("DuckDuckBot/1.0; (+http://duckduckgo.com/duckduckbot.html)", BOT_CRAWLER),
    BOT("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 (KHTML, like Gecko) "
        "Version/13.1.1 Safari/605.1.15 (Applebot/0.1; +http://www.apple.com/go/applebot)",
        BOT_CRAWLER),
    BOT("Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", BOT_CRAWLER),
    BOT("Mozilla/5.0 (compatible; SemrushBot/7~bl; +http://www.semrush.com/bot.html)", BOT_CRAWLER),
    BOT("Mozilla/5.0 (compatible; MJ12bot/v1.4.4; http://www.majestic12.co.uk/bot.php?+)",
        BOT_CRAWLER),
    BOT("Mozilla/5.0 (compatible; DotBot/1.2; +https://opensiteexplorer.org/dotbot; help@moz.com)",
        BOT_CRAWLER),
    BOT("Mozilla/5.0 (Linux; Android 7.0;) AppleWebKit/537.36 (KHTML, like Gecko) Mobile "
        "Safari/537.36 (compatible; PetalBot;+https://webmaster.petalsearch.com/site/petalbot)",
        BOT_CRAWLER),
    BOT("Sogou web spider/4.0(+http://www.sogou.com/docs/help/webmasters.htm#07)", BOT_CRAWLER),
    BOT("Mozilla/5.0 (compatible; Yahoo! Slurp; http://help.yahoo.com/help/us/ysearch/slurp)",
        BOT_CRAWLER),
    BOT("Mozilla/5.0 (compatible; SeznamBot/4.0-RC1 +http://napoveda.seznam.cz/seznambot-intro/)",
        BOT_CRAWLER),
    BOT("Mozilla/5.0 (compatible; Linux x86_64; Mail.RU_Bot/Fast/2.0; "
        "+http://go.mail.ru/help/robots)",
        BOT_CRAWLER),

    /* AI crawlers and assistants */
    BOT("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; "
        "+https://openai.com/gptbot)",
        BOT_AI_CRAWLER),
    BOT("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; "
        "+https://openai.com/bot",
        BOT_AI_CRAWLER),
    BOT("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; OAI-SearchBot/1.0; "
        "+https://openai.com/searchbot",
        BOT_AI_CRAWLER),
    BOT("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; "
        "+claudebot@anthropic.com)",
        BOT_AI_CRAWLER),
    BOT("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; "
        "+https://perplexity.ai/perplexitybot)",
        BOT_AI_CRAWLER),
    BOT("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Perplexity-User/1.0; "
        "+https://perplexity.ai/perplexity-user)",
        BOT_AI_CRAWLER),
    BOT("CCBot/2.0 (https://commoncrawl.org/faq/)", BOT_AI_CRAWLER),
    BOT("Mozilla/5.0 (Linux; Android 6.0; Nexus 5 Build/MRA58N) AppleWebKit/537.36 (KHTML, like "
        "Gecko) Chrome/51.0.5668.1446 Mobile Safari/537.36; Bytespider;bytespider@bytedance.com",
        BOT_AI_CRAWLER),
    BOT("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_10_1) AppleWebKit/600.2.5 (KHTML, like Gecko) "
        "Version/8.0.2 Safari/600.2.5 (Amazonbot/0.1; "
        "+https://developer.amazon.com/support/amazonbot)",
        BOT_AI_CRAWLER),
    BOT("meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)",
        BOT_AI_CRAWLER),

    /* Link previews of chat and social apps */
    BOT("facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", BOT_PREVIEWER),
    BOT("Twitterbot/1.0", BOT_PREVIEWER),
    BOT("Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", BOT_PREVIEWER),
    BOT("Slack-ImgProxy (+https://api.slack.com/robots)", BOT_PREVIEWER),
    BOT("Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)", BOT_PREVIEWER),
    BOT("TelegramBot (like TwitterBot)", BOT_PREVIEWER),
    BOT("WhatsApp/2.23.20.0 A", BOT_PREVIEWER),
    BOT("LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
        BOT_PREVIEWER),
    BOT("Mozilla/5.0 (Windows NT 6.1; WOW64) SkypeUriPreview Preview/0.5", BOT_PREVIEWER),
    BOT("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) "
        "Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0",
        BOT_PREVIEWER),
    BOT("Mozilla/5.0 (compatible; redditbot/1.0; +http://www.reddit.com/feedback)", BOT_PREVIEWER),
    BOT("Mozilla/5.0 (compatible; Pinterestbot/1.0; http://www.pinterest.com/bot.html)",
        BOT_PREVIEWER),
    BOT("Mozilla/5.0 (compatible; Embedly/0.2; +http://support.embed.ly/)", BOT_PREVIEWER),
    BOT("Mozilla/5.0 (compatible; vkShare; +http://vk.com/dev/Share)", BOT_PREVIEWER),
    BOT("http.rb/5.1.1 (Mastodon/4.2.8; +https://mastodon.social/)", BOT_PREVIEWER),
    BOT("Mozilla/5.0 (compatible; Bluesky Cardyb/1.1; +mailto:support@bsky.app)", BOT_PREVIEWER),
    BOT("Iframely/1.3.1 (+https://iframely.com/docs/about)", BOT_PREVIEWER),
    BOT("Quora Link Preview/1.0 (http://www.quora.com)", BOT_PREVIEWER),

    /* HTTP libraries and tools */
    BOT("curl/8.5.0", BOT_HTTP_LIBRARY),
    BOT("Wget/1.21.3", BOT_HTTP_LIBRARY),
    BOT("python-requests/2.31.0", BOT_HTTP_LIBRARY),
    BOT("Python-urllib/3.7", BOT_HTTP_LIBRARY),
    BOT("Python/3.11 aiohttp/3.9.5", BOT_HTTP_LIBRARY),
    BOT("Go-http-client/1.1", BOT_HTTP_LIBRARY),
    BOT("okhttp/4.12.0", BOT_HTTP_LIBRARY),
    BOT("axios/1.6.8", BOT_HTTP_LIBRARY),
    BOT("node-fetch/1.0 (+https://github.com/bitinn/node-fetch)", BOT_HTTP_LIBRARY),
    BOT("undici", BOT_HTTP_LIBRARY),
    BOT("Java/1.8.0_121", BOT_HTTP_LIBRARY),
    BOT("Java-http-client/17.0.2", BOT_HTTP_LIBRARY),
    BOT("Apache-HttpClient/4.5.14 (Java/17.0.9)", BOT_HTTP_LIBRARY),
    BOT("libwww-perl/6.04", BOT_HTTP_LIBRARY),
    BOT("PostmanRuntime/7.37.3", BOT_HTTP_LIBRARY),
    BOT("HTTPie/3.2.2", BOT_HTTP_LIBRARY),
    BOT("Ruby", BOT_HTTP_LIBRARY),
    BOT("Faraday v2.9.0", BOT_HTTP_LIBRARY),
    BOT("GuzzleHttp/7", BOT_HTTP_LIBRARY),
    BOT("PHP/8.2", BOT_HTTP_LIBRARY),
    BOT("Dart/3.3 (dart:io)", BOT_HTTP_LIBRARY),
    BOT("Deno/1.42.1", BOT_HTTP_LIBRARY),

    /* Headless browsers */
    BOT("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "HeadlessChrome/124.0.6367.60 Safari/537.36",
        BOT_HEADLESS),
    BOT("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "HeadlessChrome/148.0.7778.96 Safari/537.36",
        BOT_HEADLESS),
    BOT("Mozilla/5.0 (Unknown; Linux x86_64) AppleWebKit/538.1 (KHTML, like Gecko) PhantomJS/2.1.1 "
        "Safari/538.1",
        BOT_HEADLESS),
    BOT("Mozilla/5.0 (Linux; Android 7.0; Moto G (4)) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/84.0.4143.7 Mobile Safari/537.36 Chrome-Lighthouse",
        BOT_HEADLESS),

    /* Uptime monitors */
    BOT("Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)", BOT_MONITOR),
    BOT("Pingdom.com_bot_version_1.4_(http://www.pingdom.com/)", BOT_MONITOR),
    BOT("Mozilla/5.0 (Windows NT 6.2; WOW64) AppleWebKit/537.4 (KHTML, like Gecko) Chrome/98 "
        "Safari/537.4 (StatusCake)",
        BOT_MONITOR),
    BOT("Site24x7", BOT_MONITOR),
    BOT("NewRelicPinger/1.0 (269919)", BOT_MONITOR),
    BOT("Uptime-Kuma/1.23.11", BOT_MONITOR),
    BOT("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 "
        "Safari/537.36 DatadogSynthetics",
        BOT_MONITOR),
    BOT("Amazon-Route53-Health-Check-Service (ref b0eb04d5-cb5e-40e7-839b-558e52fc3f0d; report "
        "http://amzn.to/1vsZADi)",
        BOT_MONITOR),
    BOT("ELB-HealthChecker/2.0", BOT_MONITOR),
    BOT("kube-probe/1.29", BOT_MONITOR),
    BOT("check_http/v2.2.1 (nagios-plugins 2.2.1)", BOT_MONITOR),

    /* Mail and office link scanners, mail image proxies */
    BOT("Microsoft Office Existence Discovery", BOT_MAIL_SCANNER),
    BOT("Mozilla/4.0 (compatible; ms-office; MSOffice 16)", BOT_MAIL_SCANNER),
    BOT("Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.4266; Pro)",
        BOT_MAIL_SCANNER),
    BOT("Mozilla/4.0 (compatible; MSIE 7.0; Windows NT 6.1; WOW64; Trident/7.0; SLCC2; .NET CLR "
        "2.0.50727; .NET CLR 3.5.30729; .NET CLR 3.0.30729; Media Center PC 6.0; MAGW; .NET4.0C; "
        ".NET4.0E; Microsoft Outlook 14.0.7113; ms-office; MSOffice 14)",
        BOT_MAIL_SCANNER),
    BOT("Mozilla/5.0 (Windows NT 5.1; rv:11.0) Gecko Firefox/11.0 (via ggpht.com GoogleImageProxy)",
        BOT_MAIL_SCANNER),
    BOT("YahooMailProxy; https://help.yahoo.com/kb/yahoo-mail-proxy-SLN28749.html",
        BOT_MAIL_SCANNER),
    BOT("Mozilla/5.0 SeznamEmailProxy/2.0.174", BOT_MAIL_SCANNER),
    BOT("Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/55.0.2883.87 Safari/537.36 (via secureurl.fwdcdn.com - mail.ukr.net proxy)",
        BOT_MAIL_SCANNER),
    BOT("Kaspersky Lab CFR link resolver cfradmins@kaspersky.com", BOT_MAIL_SCANNER),

    /* Empty, and what is left */
    BOT("", BOT_EMPTY_UA),
    BOT("   ", BOT_EMPTY_UA),
    BOT("\t \t", BOT_EMPTY_UA),
    BOT("Mozilla/5.0", BOT_OTHER),
    BOT("Mozilla/5.0 (compatible; inoreader.com; 2 subscribers)", BOT_OTHER),
#undef PERSON
#undef BOT
};

static bool same_info(const struct ua_info *a, const struct ua_info *b)
{
    return a->bot == b->bot && a->device == b->device && strcmp(a->browser, b->browser) == 0 &&
           strcmp(a->os, b->os) == 0;
}

static bool same_agent(const struct ua_info *a, const struct ua_info *b)
{
    return a->agent == b->agent || (a->agent && b->agent && strcmp(a->agent, b->agent) == 0);
}

static const char *kind_str(enum bot_kind k) { return k == BOT_NONE ? "person" : bot_kind_name(k); }

void test_classify_ua_table(void)
{
    struct classify *c;
    if (!CHECK_EQ_INT(classify_new(1000, &c), ERR_OK))
        return;
    CHECK(ARRAY_LEN(ua_cases) >= 90);
    int wrong = 0;
    for (size_t i = 0; i < ARRAY_LEN(ua_cases); i++) {
        const struct ua_case *t = &ua_cases[i];
        struct ua_info want = {t->browser, t->os, t->device, t->bot, NULL};
        struct ua_info got;
        classify_ua(c, t->ua, strlen(t->ua), &got);
        if (same_info(&got, &want))
            continue;
        wrong++;
        test_note("row %zu \"%.90s\": want %s/%s/%s/%s, got %s/%s/%s/%s", i, t->ua,
                  kind_str(want.bot), device_name(want.device), want.browser, want.os,
                  kind_str(got.bot), device_name(got.device), got.browser, got.os);
    }
    if (wrong)
        test_note("user agents: %zu rows, %d wrong", ARRAY_LEN(ua_cases), wrong);
    CHECK(wrong <= 1); /* the bar */
    classify_free(c);
}

void test_classify_ua_edges(void)
{
    struct classify *c;
    if (!CHECK_EQ_INT(classify_new(0, &c), ERR_OK))
        return;
    struct ua_info got;

    classify_ua(c, NULL, 0, &got);
    CHECK_EQ_INT(got.bot, BOT_EMPTY_UA);
    CHECK_EQ_INT(got.device, DEV_BOT);
    classify_ua(c, "\r\n", 2, &got);
    CHECK_EQ_INT(got.bot, BOT_EMPTY_UA);

    /* The length is what counts, not a NUL. */
    static const char chrome[] = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
                                 "(KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
    classify_ua(c, chrome, sizeof(chrome) - 1, &got);
    CHECK_EQ_INT(got.bot, BOT_NONE);
    classify_ua(c, chrome, 11, &got); /* "Mozilla/5.0" */
    CHECK_EQ_INT(got.bot, BOT_OTHER);
    static const char with_nul[] = "curl/8.5.0\0Mozilla/5.0 (Windows NT 10.0)";
    classify_ua(c, with_nul, sizeof(with_nul) - 1, &got);
    CHECK_EQ_INT(got.bot, BOT_HTTP_LIBRARY);

    /* A long hostile user agent finishes (the regex has a step limit) and is
     * a bot: isbot's "^[^ ]{50,}$" and friends see it for what it is. */
    size_t n = 64 * 1024;
    char *big = malloc(n);
    CHECK(big != NULL);
    if (big) {
        for (size_t i = 0; i < n; i++)
            big[i] = "a1.-:"[i % 5];
        classify_ua(c, big, n, &got);
        CHECK(got.bot != BOT_NONE);
        free(big);
    }

    /* A bot's claimed browser is not counted as one. */
    static const char gbot[] = "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) "
                               "AppleWebKit/537.36 (KHTML, like Gecko) Chrome/80.0.3987.92 Mobile "
                               "Safari/537.36 (compatible; Googlebot/2.1)";
    classify_ua(c, gbot, sizeof(gbot) - 1, &got);
    CHECK_EQ_STR(got.browser, "Other");
    CHECK_EQ_STR(got.os, "Other");
    CHECK_EQ_INT(got.device, DEV_BOT);
    classify_free(c);
    classify_free(NULL);

    enum log_level saved = log_level;
    log_level = LOG_OFF; /* the refusal is logged; not here */
    CHECK_EQ_INT(classify_new((size_t)-1, &c), ERR_TOOBIG);
    log_level = saved;
    CHECK(c == NULL);
}

void test_classify_names(void)
{
    CHECK_EQ_STR(device_name(DEV_DESKTOP), "desktop");
    CHECK_EQ_STR(device_name(DEV_MOBILE), "mobile");
    CHECK_EQ_STR(device_name(DEV_TABLET), "tablet");
    CHECK_EQ_STR(device_name(DEV_BOT), "bot");
    CHECK_EQ_STR(device_name(DEV_OTHER), "other");
    CHECK(bot_kind_name(BOT_NONE) == NULL);
    CHECK_EQ_STR(bot_kind_name(BOT_CRAWLER), "crawler");
    CHECK_EQ_STR(bot_kind_name(BOT_AI_CRAWLER), "ai_crawler");
    CHECK_EQ_STR(bot_kind_name(BOT_HTTP_LIBRARY), "http_library");
    CHECK_EQ_STR(bot_kind_name(BOT_PREVIEWER), "previewer");
    CHECK_EQ_STR(bot_kind_name(BOT_MAIL_SCANNER), "mail_scanner");
    CHECK_EQ_STR(bot_kind_name(BOT_HEADLESS), "headless");
    CHECK_EQ_STR(bot_kind_name(BOT_MONITOR), "monitor");
    CHECK_EQ_STR(bot_kind_name(BOT_EMPTY_UA), "empty_ua");
    CHECK_EQ_STR(bot_kind_name(BOT_OTHER), "other");
    CHECK_EQ_STR(ref_group_name(REF_DIRECT), "direct");
    CHECK_EQ_STR(ref_group_name(REF_INTERNAL), "internal");
    CHECK_EQ_STR(ref_group_name(REF_SEARCH), "search");
    CHECK_EQ_STR(ref_group_name(REF_SOCIAL), "social");
    CHECK_EQ_STR(ref_group_name(REF_EMAIL), "email");
    CHECK_EQ_STR(ref_group_name(REF_REFERRAL), "referral");
}

/* A bot inside an in-app browser's user agent: its own name wins over the
 * in-app rule (issue 22, item 16). The first five are the crawlers' own
 * user agents; the others put a bot's name into an app's user agent the way
 * those do, each behind another app's token, and the last names no agent
 * shortd knows, only a crawler's word, outside the app's token. */
static const struct agent_case {
    const char *ua;
    enum bot_kind bot;
    const char *agent; /* NULL: a person */
} in_app_bots[] = {
    {"Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile "
     "Safari/537.36 (compatible; TikTokSpider; ttspider-feedback@tiktok.com)",
     BOT_CRAWLER, "tiktokspider"},
    {"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
     "Gecko) Mobile/15E148 (compatible; TikTokSpider; ttspider-feedback@tiktok.com)",
     BOT_CRAWLER, "tiktokspider"},
    {"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
     "Version/16.0 Safari/605.1.15 (compatible; SnapchatAds/1.0; "
     "+https://businesshelp.snapchat.com/s/article/adsbot-crawler)",
     BOT_CRAWLER, "snapchatads"},
    {"Mozilla/5.0 (iPhone; CPU iPhone OS 7_0 like Mac OS X) AppleWebKit/537.51.1 (KHTML, like "
     "Gecko) Mobile/11A465 Twitter for iPhone BrandVerity/1.0 "
     "(http://www.brandverity.com/why-is-brandverity-visiting-me)",
     BOT_CRAWLER, "brandverity"},
    {"Mozilla/5.0 (Macintosh; Intel Mac OS X 10.10; rv:41.0) Gecko/20100101 Firefox/55.0 "
     "BrandVerity/1.0 (http://www.brandverity.com/why-is-brandverity-visiting-me)",
     BOT_CRAWLER, "brandverity"},
    {"Mozilla/5.0 (iPhone; CPU iPhone OS 14_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
     "Gecko) Version/14.1.1 Mobile/15E148 Snapchat/11.36.0.36 (like Safari/604.1) "
     "(compatible; SnapchatAds/1.0; +https://businesshelp.snapchat.com/)",
     BOT_CRAWLER, "snapchatads"},
    {"Mozilla/5.0 (Linux; Android 10; SM-G973F Build/QQ3A.200805.001; wv) AppleWebKit/537.36 "
     "(KHTML, like Gecko) Version/4.0 Chrome/85.0.4183.101 Mobile Safari/537.36 "
     "trill_2021806060 AppName/musical_ly (compatible; TikTokSpider; "
     "ttspider-feedback@tiktok.com)",
     BOT_CRAWLER, "tiktokspider"},
    {"Mozilla/5.0 (iPhone; CPU iPhone OS 13_3_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
     "Gecko) Mobile/17D50 Twitter for iPhone/8.10 (compatible; Googlebot/2.1; "
     "+http://www.google.com/bot.html)",
     BOT_CRAWLER, "googlebot"},
    {"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
     "Gecko) Mobile/15E148 Instagram 329.0.0.41.93 (compatible; UptimeRobot/2.0; "
     "http://www.uptimerobot.com/)",
     BOT_MONITOR, "uptimerobot"},
    {"Mozilla/5.0 (Linux; Android 9; SM-G950U Build/PPR1.180610.011; wv) AppleWebKit/537.36 "
     "(KHTML, like Gecko) Version/4.0 Chrome/80.0.3987.149 Mobile Safari/537.36 "
     "[FB_IAB/FB4A;FBAV/263.0.0.46.121;] (compatible; FeedSpider/1.0; +https://example.com/bot)",
     BOT_CRAWLER, "other"},
    /* And people stay people: the apps' own tokens name no bot. */
    {"Mozilla/5.0 (iPhone; CPU iPhone OS 14_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
     "Gecko) Version/14.1.1 Mobile/15E148 Snapchat/11.36.0.36 (like Safari/604.1)",
     BOT_NONE, NULL},
    {"Mozilla/5.0 (iPhone; CPU iPhone OS 13_3_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
     "Gecko) Mobile/17D50 Twitter for iPhone/8.10",
     BOT_NONE, NULL},
    {"Mozilla/5.0 (Linux; Android 13; SM-S918B Build/TP1A.220624.014; wv) AppleWebKit/537.36 "
     "(KHTML, like Gecko) Version/4.0 Chrome/120.0.6099.230 Mobile Safari/537.36 trill_330403 "
     "JsSdk/1.0 NetType/WIFI Channel/googleplay AppName/musical_ly app_version/33.4.3 "
     "ByteLocale/en Region/US AppId/1233 BytedanceWebview/d8a21c6",
     BOT_NONE, NULL},
};

/* Which agent each bot was: a bounded set of names, "other" for the rest. */
static const struct agent_case agent_cases[] = {
    {"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", BOT_CRAWLER,
     "googlebot"},
    {"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", BOT_CRAWLER,
     "bingbot"},
    {"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", BOT_PREVIEWER,
     "facebookexternalhit"},
    {"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) "
     "Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0",
     BOT_PREVIEWER, "facebookexternalhit"},
    {"Twitterbot/1.0", BOT_PREVIEWER, "twitterbot"},
    {"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", BOT_PREVIEWER, "slackbot"},
    {"Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)", BOT_PREVIEWER,
     "discordbot"},
    {"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; "
     "+https://openai.com/gptbot)",
     BOT_AI_CRAWLER, "gptbot"},
    {"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; "
     "+claudebot@anthropic.com)",
     BOT_AI_CRAWLER, "claudebot"},
    {"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; PerplexityBot/1.0; "
     "+https://perplexity.ai/perplexitybot)",
     BOT_AI_CRAWLER, "perplexitybot"},
    {"Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)", BOT_CRAWLER,
     "ahrefsbot"},
    {"Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)", BOT_MONITOR,
     "uptimerobot"},
    {"Pingdom.com_bot_version_1.4_(http://www.pingdom.com/)", BOT_MONITOR, "pingdom"},
    {"Mozilla/5.0 (compatible; Linux x86_64; Mail.RU_Bot/Fast/2.0; "
     "+http://go.mail.ru/help/robots)",
     BOT_CRAWLER, "mail.ru_bot"},
    {"Microsoft Office/16.0 (Windows NT 10.0; Microsoft Outlook 16.0.4266; Pro)", BOT_MAIL_SCANNER,
     "outlook"},
    {"check_http/v2.2.1 (nagios-plugins 2.2.1)", BOT_MONITOR, "nagios"},
    {"GoogleStackdriverMonitoring-UptimeChecks(https://cloud.google.com/monitoring)", BOT_MONITOR,
     "stackdriver"},
    {"Dart/3.3 (dart:io)", BOT_HTTP_LIBRARY, "dart"},
    {"curl/8.5.0", BOT_HTTP_LIBRARY, "curl"},
    /* Monitors and AI agents that used to be kind "other". */
    {"Mozilla/5.0 (compatible; Hyperping/1.0; +https://hyperping.io)", BOT_MONITOR, "hyperping"},
    {"Mozilla/5.0 (compatible; OhDear/1.1; +https://ohdear.app/checker)", BOT_MONITOR, "ohdear"},
    {"Mozilla/5.0 (compatible; NodePing)", BOT_MONITOR, "nodeping"},
    {"jetmon/1.0 (Jetpack Site Uptime Monitor by WordPress.com)", BOT_MONITOR, "jetmon"},
    {"Gatus/1.0", BOT_MONITOR, "gatus"},
    {"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Amzn-SearchBot/0.1) "
     "Chrome/119.0.6045.214 Safari/537.36",
     BOT_AI_CRAWLER, "amzn-searchbot"},
    {"Mozilla/5.0 (compatible; DeepSeekBot/1.0; +https://www.deepseek.com/bot)", BOT_AI_CRAWLER,
     "deepseekbot"},
    {"meta-webindexer/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)",
     BOT_AI_CRAWLER, "meta-webindexer"},
    {"Mozilla/5.0 (compatible; FirecrawlAgent/1.0)", BOT_AI_CRAWLER, "firecrawlagent"},
    /* A generic word gives the kind and names no agent. */
    {"Mozilla/5.0 (compatible; Seekport Crawler; http://seekport.com/)", BOT_CRAWLER, "other"},
    {"Mozilla/5.0 (compatible; inoreader.com; 2 subscribers)", BOT_OTHER, "other"},
    {"", BOT_EMPTY_UA, "other"},
    {"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
     "Chrome/124.0.0.0 Safari/537.36",
     BOT_NONE, NULL},
};

static int check_agents(struct classify *c, const struct agent_case *cases, size_t n)
{
    int wrong = 0;
    for (size_t i = 0; i < n; i++) {
        const struct agent_case *t = &cases[i];
        struct ua_info got;
        classify_ua(c, t->ua, strlen(t->ua), &got);
        struct ua_info want = got;
        want.bot = t->bot;
        want.agent = t->agent;
        if (got.bot == want.bot && same_agent(&got, &want))
            continue;
        wrong++;
        test_note("\"%.120s\": want %s/%s, got %s/%s", t->ua, kind_str(t->bot),
                  t->agent ? t->agent : "-", kind_str(got.bot), got.agent ? got.agent : "-");
    }
    return wrong;
}

void test_classify_in_app_bots(void)
{
    struct classify *c;
    if (!CHECK_EQ_INT(classify_new(0, &c), ERR_OK))
        return;
    CHECK_EQ_INT(check_agents(c, in_app_bots, ARRAY_LEN(in_app_bots)), 0);
    classify_free(c);
}

/* True when 'name' is one of classify_agent_name()'s. */
static bool agent_listed(const char *name)
{
    for (size_t i = 0; classify_agent_name(i); i++) {
        if (strcmp(classify_agent_name(i), name) == 0)
            return true;
    }
    return false;
}

void test_classify_agents(void)
{
    struct classify *c;
    if (!CHECK_EQ_INT(classify_new(100, &c), ERR_OK))
        return;
    CHECK_EQ_INT(check_agents(c, agent_cases, ARRAY_LEN(agent_cases)), 0);

    /* The names are few, short, lowercase, distinct, "other" last; every
     * bot of the big table gets one of them, and no person one. */
    size_t count = 0;
    const char *last = NULL;
    for (const char *name; (name = classify_agent_name(count)); count++) {
        size_t len = strlen(name);
        bool plain = len > 0 && len <= AGENT_NAME_MAX;
        for (size_t k = 0; k < len; k++)
            plain = plain && (strchr("abcdefghijklmnopqrstuvwxyz0123456789._-", name[k]) != NULL);
        if (!CHECK(plain))
            test_note("agent name \"%s\"", name);
        for (size_t j = 0; j < count; j++)
            CHECK(strcmp(classify_agent_name(j), name) != 0);
        last = name;
    }
    CHECK(count > 100 && count < TALLY_VALUES_MAX);
    CHECK(last && strcmp(last, "other") == 0);
    for (size_t i = 0; i < ARRAY_LEN(ua_cases); i++) {
        struct ua_info got;
        classify_ua(c, ua_cases[i].ua, strlen(ua_cases[i].ua), &got);
        if (got.bot == BOT_NONE)
            CHECK(got.agent == NULL);
        else if (!CHECK(got.agent && agent_listed(got.agent)))
            test_note("row %zu: agent %s", i, got.agent ? got.agent : "NULL");
    }
    classify_free(c);
}

/* The cache: the same answers as without it, at any size, across clears. */
void test_classify_cache(void)
{
    struct classify *plain, *tiny, *big;
    if (!CHECK_EQ_INT(classify_new(0, &plain), ERR_OK))
        return;
    CHECK_EQ_INT(classify_new(3, &tiny), ERR_OK);
    CHECK_EQ_INT(classify_new(100000, &big), ERR_OK);
    int differ = 0;
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < ARRAY_LEN(ua_cases); i++) {
            const char *ua = ua_cases[i].ua;
            struct ua_info want, a, b, again;
            classify_ua(plain, ua, strlen(ua), &want);
            classify_ua(tiny, ua, strlen(ua), &a);
            classify_ua(big, ua, strlen(ua), &b);
            classify_ua(big, ua, strlen(ua), &again);
            if (!same_info(&want, &a) || !same_info(&want, &b) || !same_info(&b, &again) ||
                !same_agent(&want, &a) || !same_agent(&want, &b) || !same_agent(&b, &again)) {
                differ++;
                test_note("cache differs on row %zu, round %d", i, round);
            }
        }
    }
    CHECK_EQ_INT(differ, 0);

    /* Distinct user agents past the capacity: cleared, still right. */
    for (int i = 0; i < 50; i++) {
        char ua[64];
        snprintf(ua, sizeof(ua), "curl/7.%d.0", i);
        struct ua_info got;
        classify_ua(tiny, ua, strlen(ua), &got);
        if (!CHECK_EQ_INT(got.bot, BOT_HTTP_LIBRARY))
            break;
    }
    classify_free(plain);
    classify_free(tiny);
    classify_free(big);
}

/* The fast path (classify.c) gives what the reference way gives, kind,
 * agent, device, browser and OS, for every user agent here: the tables
 * above, each of their prefixes and suffixes (which cut the bots' names and
 * the patterns' literals at every place), and browsers' user agents with a
 * word of the bot rules or of isbot's patterns put in, in any case, at the
 * start, inside or at the end. */
static int fast_differs(struct classify *fast, struct classify *ref, const char *ua, size_t n)
{
    struct ua_info a, b;
    classify_ua(fast, ua, n, &a);
    classify_ua(ref, ua, n, &b);
    if (same_info(&a, &b) && same_agent(&a, &b))
        return 0;
    test_note("fast path differs on \"%.*s\": %s/%s/%s/%s/%s against %s/%s/%s/%s/%s", (int)n, ua,
              kind_str(a.bot), a.agent ? a.agent : "-", device_name(a.device), a.browser, a.os,
              kind_str(b.bot), b.agent ? b.agent : "-", device_name(b.device), b.browser, b.os);
    return 1;
}

static int fast_differs_cut(struct classify *fast, struct classify *ref, const char *ua)
{
    size_t n = strlen(ua);
    int differ = 0;
    for (size_t k = 0; k <= n && differ < 5; k++) {
        differ += fast_differs(fast, ref, ua, k);         /* a prefix */
        differ += fast_differs(fast, ref, ua + k, n - k); /* a suffix */
    }
    return differ;
}

void test_classify_fast_path(void)
{
    struct classify *fast, *ref;
    if (!CHECK_EQ_INT(classify_new(0, &fast), ERR_OK))
        return;
    CHECK_EQ_INT(classify_new(0, &ref), ERR_OK);
    classify_set_reference(ref, true);
    /* Most of isbot's patterns are looked for by a literal, or the fast
     * path is not one. */
    CHECK(classify_literals(fast) >= 100);
    CHECK_EQ_INT(classify_literals(ref), classify_literals(fast));

    int differ = 0;
    for (size_t i = 0; i < ARRAY_LEN(ua_cases); i++)
        differ += fast_differs_cut(fast, ref, ua_cases[i].ua);
    for (size_t i = 0; i < ARRAY_LEN(agent_cases); i++)
        differ += fast_differs_cut(fast, ref, agent_cases[i].ua);
    for (size_t i = 0; i < ARRAY_LEN(in_app_bots); i++)
        differ += fast_differs_cut(fast, ref, in_app_bots[i].ua);

    static const char *const browsers[] = {
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/124.0.0.0 Safari/537.36",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, "
        "like Gecko) Mobile/15E148 Instagram 329.0.0.41.93",
    };
    /* Words of the bot rules and of isbot's patterns, their neighbours
     * (what a lookaround or an optional letter is about) and near misses. */
    /* clang-format off */
    static const char *const words[] = {
        "bot", "bots", "bot_", "cubot", " cubot", "robot", "scan", "camscan", "http", "libhttp",
        "news", "gnews", "newssapphire", "google", "googleapp", " channel/google", "google/google",
        "java", "java;", "()", "|", "@ab-c.", "@a.", ".com", ".combo", "x/1.0;", "24x7", ";a;",
        "; abc;", "rss", "rss1", "monitor", "monitors", "check", "checker", "agent", "agents",
        "node", "nodes", "perl", "perls", "feed", "url", "crawl", "spider", "proxy", "preview",
        "headless", "mail.ru/", "ptst/1", "ptst 1", "rexx;", "daum/", " daum ", " deusu/",
        "curl", "wget", "python", "go-http-client", "okhttp", "whatsapp", "snapchat", "yandex",
        "tiktokspider", "facebookexternalhit", "microsoft office existence discovery",
        "Chrome-Lighthouse", "HeadlessChrome", "Googlebot", "SLURP", "PhantomJS", "Tools",
    };
    /* clang-format on */
    char ua[512];
    for (size_t b = 0; b < ARRAY_LEN(browsers); b++) {
        size_t bn = strlen(browsers[b]), half = bn / 2;
        for (size_t w = 0; w < ARRAY_LEN(words); w++) {
            for (int up = 0; up < 2; up++) {
                char word[64];
                size_t wn = strlen(words[w]);
                for (size_t k = 0; k <= wn; k++)
                    word[k] = up && words[w][k] >= 'a' && words[w][k] <= 'z'
                                  ? (char)(words[w][k] - 'a' + 'A')
                                  : words[w][k];
                int n = snprintf(ua, sizeof(ua), "%s%s", word, browsers[b]);
                differ += fast_differs(fast, ref, ua, (size_t)n);
                n = snprintf(ua, sizeof(ua), "%.*s%s%s", (int)half, browsers[b], word,
                             browsers[b] + half);
                differ += fast_differs(fast, ref, ua, (size_t)n);
                n = snprintf(ua, sizeof(ua), "%s %s", browsers[b], word);
                differ += fast_differs(fast, ref, ua, (size_t)n);
                n = snprintf(ua, sizeof(ua), "%s%s", browsers[b], word);
                differ += fast_differs(fast, ref, ua, (size_t)n);
            }
        }
    }
    /* Long user agents made to cost the regexes the most (backtracking
     * over runs of word characters, many places to try each pattern): the
     * whole alternation must not run out of steps on any the fast path
     * takes (classify.c, UA_FAST_MAX) where its parts do not. */
    /* clang-format off */
    static const char *const units[] = {"a", "a ", "a/", "a;", "ab1 ", "a1.-:", "(a", "a)",
                                        "@a", "x/1.0", " cu", "aaaaaaaaaaaaaaaaaaaa/1.0",
                                        " aaaaaaaaaaaaa;", "news", "go", "bot"};
    /* clang-format on */
    static char big[1024];
    for (size_t u = 0; u < ARRAY_LEN(units); u++) {
        for (int lead = 0; lead < 2; lead++) {
            size_t n = lead ? (size_t)snprintf(big, sizeof(big), "Mozilla/5.0 (X11) ") : 0;
            size_t m = strlen(units[u]);
            for (; n + m <= sizeof(big); n += m)
                memcpy(big + n, units[u], m);
            differ += fast_differs(fast, ref, big, n);
            big[n - 1] = '%';
            differ += fast_differs(fast, ref, big, n);
        }
    }
    CHECK_EQ_INT(differ, 0);
    classify_free(fast);
    classify_free(ref);
}

/* In a hurry, a user agent not in the cache gets the bot check alone: a
 * bot is the same bot, a person a person of unknown browser, OS and device;
 * a hurried answer is not cached, a cached one is given in full. */
void test_classify_hurried(void)
{
    struct classify *c, *plain;
    if (!CHECK_EQ_INT(classify_new(100, &c), ERR_OK))
        return;
    CHECK_EQ_INT(classify_new(0, &plain), ERR_OK);
    int differ = 0, people = 0;
    for (size_t i = 0; i < ARRAY_LEN(ua_cases); i++) {
        const char *ua = ua_cases[i].ua;
        struct ua_info want, got;
        classify_ua(plain, ua, strlen(ua), &want);
        bool hurried = classify_ua_hurried(c, ua, strlen(ua), &got);
        people += want.bot == BOT_NONE;
        struct ua_info unknown = {"Unknown", "Unknown", DEV_UNKNOWN, BOT_NONE, NULL};
        if (hurried != (want.bot == BOT_NONE) ||
            !same_info(&got, want.bot == BOT_NONE ? &unknown : &want) || !same_agent(&got, &want)) {
            differ++;
            test_note("row %zu in a hurry: %s/%s/%s/%s", i, kind_str(got.bot),
                      device_name(got.device), got.browser, got.os);
        }
    }
    CHECK_EQ_INT(differ, 0);
    uint64_t misses, hurried;
    classify_counts(c, &misses, &hurried);
    CHECK_EQ_INT(misses, ARRAY_LEN(ua_cases));
    CHECK_EQ_INT(hurried, people);
    CHECK(people > 0);

    /* Not cached: the next answer is the full one, and cached; then in a
     * hurry too. */
    static const char chrome[] = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
                                 "(KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
    struct ua_info got;
    CHECK(classify_ua_hurried(c, chrome, sizeof(chrome) - 1, &got));
    CHECK_EQ_STR(got.browser, "Unknown");
    CHECK_EQ_STR(device_name(got.device), "unknown");
    classify_ua(c, chrome, sizeof(chrome) - 1, &got);
    CHECK_EQ_STR(got.browser, "Chrome");
    CHECK(!classify_ua_hurried(c, chrome, sizeof(chrome) - 1, &got));
    CHECK_EQ_STR(got.browser, "Chrome");
    CHECK_EQ_STR(got.os, "Windows");
    classify_counts(c, &misses, &hurried);
    CHECK_EQ_INT(misses, ARRAY_LEN(ua_cases) + 2);
    CHECK_EQ_INT(hurried, people + 1);
    classify_free(c);
    classify_free(plain);
}

#define S(s) s, sizeof(s) - 1

void test_classify_prefetch(void)
{
    CHECK(!classify_is_prefetch(NULL, 0, NULL, 0, NULL, 0, NULL, 0));
    CHECK(classify_is_prefetch(S("prefetch"), NULL, 0, NULL, 0, NULL, 0));
    CHECK(classify_is_prefetch(S("prefetch;prerender"), NULL, 0, NULL, 0, NULL, 0));
    CHECK(classify_is_prefetch(S("prefetch;anonymous-client-ip"), NULL, 0, NULL, 0, NULL, 0));
    CHECK(classify_is_prefetch(S("Prerender"), NULL, 0, NULL, 0, NULL, 0));
    CHECK(!classify_is_prefetch(S(""), NULL, 0, NULL, 0, NULL, 0));
    CHECK(!classify_is_prefetch(S("navigate"), NULL, 0, NULL, 0, NULL, 0));
    CHECK(classify_is_prefetch(NULL, 0, S("prefetch"), NULL, 0, NULL, 0));
    CHECK(!classify_is_prefetch(NULL, 0, S("other"), NULL, 0, NULL, 0));
    CHECK(classify_is_prefetch(NULL, 0, NULL, 0, S("preview"), NULL, 0));
    CHECK(classify_is_prefetch(NULL, 0, NULL, 0, S("prefetch"), NULL, 0));
    CHECK(!classify_is_prefetch(NULL, 0, NULL, 0, S("instant"), NULL, 0));
    CHECK(classify_is_prefetch(NULL, 0, NULL, 0, NULL, 0, S("prefetch")));
    CHECK(classify_is_prefetch(NULL, 0, NULL, 0, NULL, 0, S("PREFETCH")));
    CHECK(!classify_is_prefetch(NULL, 0, NULL, 0, NULL, 0, S("pre")));
    /* The length counts, not the NUL. */
    CHECK(!classify_is_prefetch("prefetch", 3, NULL, 0, NULL, 0, NULL, 0));
}

static const char *const self_hosts[] = {"sho.rt", "go.sho.rt:8443", "[::1]:8080", NULL};

static const struct ref_case {
    const char *ref; /* NULL: absent */
    const char *host;
    enum ref_group group;
} ref_cases[] = {
    {NULL, "", REF_DIRECT},
    {"", "", REF_DIRECT},
    {"   ", "", REF_DIRECT},
    {"https://sho.rt/abc", "sho.rt", REF_INTERNAL},
    {"https://GO.SHO.RT:8443/x", "go.sho.rt", REF_INTERNAL},
    {"http://go.sho.rt/", "go.sho.rt", REF_INTERNAL},
    {"http://[::1]:8080/dash", "::1", REF_INTERNAL},
    {"https://www.google.com/", "www.google.com", REF_SEARCH},
    {"https://www.google.co.uk/search?q=x", "www.google.co.uk", REF_SEARCH},
    {"https://google.de", "google.de", REF_SEARCH},
    {"https://www.bing.com/search?q=shortd", "www.bing.com", REF_SEARCH},
    {"https://duckduckgo.com/", "duckduckgo.com", REF_SEARCH},
    {"https://search.yahoo.co.jp/", "search.yahoo.co.jp", REF_SEARCH},
    {"https://yandex.ru/search/?text=a", "yandex.ru", REF_SEARCH},
    {"https://www.baidu.com/link?url=x", "www.baidu.com", REF_SEARCH},
    {"https://www.ecosia.org/", "www.ecosia.org", REF_SEARCH},
    {"https://search.brave.com/search?q=a", "search.brave.com", REF_SEARCH},
    {"https://www.startpage.com/", "www.startpage.com", REF_SEARCH},
    {"https://www.qwant.com/", "www.qwant.com", REF_SEARCH},
    {"https://search.naver.com/search.naver?query=a", "search.naver.com", REF_SEARCH},
    {"https://google.evil.com/", "google.evil.com", REF_REFERRAL},
    {"https://docs.google.com/document/d/1", "docs.google.com", REF_REFERRAL},
    {"https://mail.google.com/mail/u/0/", "mail.google.com", REF_EMAIL},
    {"https://outlook.live.com/mail/0/inbox", "outlook.live.com", REF_EMAIL},
    {"https://outlook.office.com/", "outlook.office.com", REF_EMAIL},
    {"https://nam12.safelinks.protection.outlook.com/?url=x",
     "nam12.safelinks.protection.outlook.com", REF_EMAIL},
    {"https://mail.yahoo.com/d/folders/1", "mail.yahoo.com", REF_EMAIL},
    {"https://webmail.example.de/", "webmail.example.de", REF_EMAIL},
    {"https://mail.example.org/owa/", "mail.example.org", REF_EMAIL},
    {"https://l.facebook.com/l.php?u=x", "l.facebook.com", REF_SOCIAL},
    {"https://lm.facebook.com/", "lm.facebook.com", REF_SOCIAL},
    {"https://t.co/abc", "t.co", REF_SOCIAL},
    {"https://x.com/someone/status/1", "x.com", REF_SOCIAL},
    {"https://www.linkedin.com/feed/", "www.linkedin.com", REF_SOCIAL},
    {"https://lnkd.in/xyz", "lnkd.in", REF_SOCIAL},
    {"https://out.reddit.com/t3_x", "out.reddit.com", REF_SOCIAL},
    {"https://www.youtube.com/", "www.youtube.com", REF_SOCIAL},
    {"https://www.tiktok.com/", "www.tiktok.com", REF_SOCIAL},
    {"https://www.pinterest.co.uk/", "www.pinterest.co.uk", REF_SOCIAL},
    {"https://bsky.app/profile/x", "bsky.app", REF_SOCIAL},
    {"https://mastodon.social/@someone", "mastodon.social", REF_SOCIAL},
    {"https://t.me/channel", "t.me", REF_SOCIAL},
    {"https://discord.com/channels/1/2", "discord.com", REF_SOCIAL},
    {"https://news.ycombinator.com/item?id=1", "news.ycombinator.com", REF_SOCIAL},
    {"https://www.threads.net/", "www.threads.net", REF_SOCIAL},
    {"https://blog.example.com/post", "blog.example.com", REF_REFERRAL},
    {"HTTPS://WWW.Example.COM:8443/Path", "www.example.com", REF_REFERRAL},
    {"https://user:secret@example.com/", "example.com", REF_REFERRAL},
    {"http://example.com./", "example.com", REF_REFERRAL},
    {"http://192.0.2.7:8080/", "192.0.2.7", REF_REFERRAL},
    {"  https://example.com/  ", "example.com", REF_REFERRAL},
    {"https://fakebook.com/", "fakebook.com", REF_REFERRAL},
    {"https://notfacebook.com/", "notfacebook.com", REF_REFERRAL},
    {"android-app://com.google.android.gm/", "com.google.android.gm", REF_EMAIL},
    {"android-app://com.google.android.googlequicksearchbox/https/www.google.com",
     "com.google.android.googlequicksearchbox", REF_SEARCH},
    {"android-app://com.slack", "com.slack", REF_SOCIAL},
    {"android-app://org.example.reader/", "org.example.reader", REF_REFERRAL},
    /* Garbage names no origin: direct. */
    {"example.com/page", "", REF_DIRECT},
    {"not a url", "", REF_DIRECT},
    {"about:blank", "", REF_DIRECT},
    {"https://", "", REF_DIRECT},
    {"https:///path", "", REF_DIRECT},
    {"https://exa mple.com/", "", REF_DIRECT},
    {"https://example.com:80x/", "", REF_DIRECT},
    {"https://[::1/", "", REF_DIRECT},
    {"https://ex%61mple.com/", "", REF_DIRECT},
    {"https://\xc3\xa9xample.com/", "", REF_DIRECT},
    {"://example.com", "", REF_DIRECT},
};

void test_classify_referrer(void)
{
    CHECK(ARRAY_LEN(ref_cases) >= 20);
    for (size_t i = 0; i < ARRAY_LEN(ref_cases); i++) {
        const struct ref_case *t = &ref_cases[i];
        char host[DIM_MAX + 1];
        enum ref_group g;
        memset(host, 'x', sizeof(host));
        classify_referrer(t->ref, t->ref ? strlen(t->ref) : 0, self_hosts, host, &g);
        bool ok = CHECK_EQ_STR(host, t->host);
        ok = CHECK_EQ_STR(ref_group_name(g), ref_group_name(t->group)) && ok;
        if (!ok)
            test_note("referrer row %zu: \"%s\"", i, t->ref ? t->ref : "(absent)");
    }

    /* No self hosts at all. */
    char host[DIM_MAX + 1];
    enum ref_group g;
    classify_referrer(S("https://sho.rt/"), NULL, host, &g);
    CHECK_EQ_INT(g, REF_REFERRAL);

    /* A host longer than DIM_MAX is clamped, still grouped by its full name. */
    char longref[400];
    int len = snprintf(longref, sizeof(longref), "https://%s.example.com/x",
                       "a123456789b123456789c123456789d123456789e123456789f123456789."
                       "g123456789h123456789i123456789j123456789k123456789l123456789."
                       "m123456789n123456789");
    classify_referrer(longref, (size_t)len, self_hosts, host, &g);
    CHECK_EQ_INT(strlen(host), DIM_MAX);
    CHECK(strncmp(host, "a123456789b", 11) == 0);
    CHECK_EQ_INT(g, REF_REFERRAL);

    len = snprintf(longref, sizeof(longref), "https://%s.mastodon.social/",
                   "x123456789y1234567"
                   "89z123456789x123456789y123456789z123456789x123456789y123456789z123456789"
                   "x123456789y123456789z123456789x123456789");
    classify_referrer(longref, (size_t)len, self_hosts, host, &g);
    CHECK_EQ_INT(strlen(host), DIM_MAX);
    CHECK_EQ_INT(g, REF_SOCIAL);

    /* Past the longest DNS name: not a host. */
    char huge[600];
    memcpy(huge, "https://", 8);
    memset(huge + 8, 'a', 300);
    classify_referrer(huge, 308, self_hosts, host, &g);
    CHECK_EQ_STR(host, "");
    CHECK_EQ_INT(g, REF_DIRECT);
}

void test_classify_language(void)
{
    static const struct {
        const char *al; /* NULL: absent */
        const char *want;
    } cases[] = {
        {NULL, ""},
        {"", ""},
        {"en-US,en;q=0.9", "en"},
        {"de-DE,de;q=0.9,en-US;q=0.8,en;q=0.7", "de"},
        {"fr;q=0.5, en-GB;q=0.9", "en"},
        {"en;q=0.8, fr;q=0.8", "en"}, /* a tie: the first */
        {"  PT-br ;q=1.0", "pt"},
        {"*", ""},
        {"*;q=0.1, es", "es"},
        {"es;q=0.1, *", ""}, /* the best is the wildcard */
        {"zh-Hant-TW", "zh"},
        {"zh_CN", "zh"},
        {"en;q=0", ""}, /* not acceptable */
        {"en;q=0, de;q=0.001", "de"},
        {"en;q=abc, de;q=0.5", "de"}, /* malformed q: skipped */
        {"en;q=1.5, de", "de"},
        {"en;q=0.1234, de;q=0.1", "de"}, /* four decimals: malformed */
        {"x-klingon, tlh", "tlh"},       /* one-letter primary: private use */
        {"123, ja", "ja"},
        {"toolongsubtag, ko", "ko"},
        {",,, ;; ,", ""},
        {"en-US;foo=bar;q=0.4, it;q=0.3", "en"},
        {"i-default", ""},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        char out[16];
        memset(out, 'x', sizeof(out));
        classify_language(cases[i].al, cases[i].al ? strlen(cases[i].al) : 0, out);
        if (!CHECK_EQ_STR(out, cases[i].want))
            test_note("language row %zu: \"%s\"", i, cases[i].al ? cases[i].al : "(absent)");
    }
}

void test_classify_utm(void)
{
    static const struct {
        const char *q; /* NULL: absent */
        const char *source, *medium, *campaign;
    } cases[] = {
        {NULL, "", "", ""},
        {"", "", "", ""},
        {"a=1&b=2", "", "", ""},
        {"utm_source=newsletter&utm_medium=email&utm_campaign=spring_sale", "newsletter", "email",
         "spring_sale"},
        {"utm_campaign=Spring+Sale%202024&utm_source=x", "x", "", "Spring Sale 2024"},
        {"utm_source=caf%C3%A9", "caf\xc3\xa9", "", ""},
        {"utm_source=first&utm_source=second", "first", "", ""},
        {"UTM_Source=Twitter", "Twitter", "", ""},
        {"utm_source", "", "", ""},
        {"utm_source=&utm_medium=cpc", "", "cpc", ""},
        {"utm_source=100%&utm_medium=%zz%4", "100%", "%zz%4", ""},
        {"utm_source=a%00b%0Ac", "abc", "", ""}, /* control characters dropped */
        {"utm_source=%FF%FEok", "\xef\xbf\xbd\xef\xbf\xbdok", "", ""},
        {"x=1&&utm_medium=social&", "", "social", ""},
        {"utm_sourcex=1&xutm_source=2", "", "", ""},
        {"utm_campaign=a=b", "", "", "a=b"},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        char s[DIM_MAX + 1], m[DIM_MAX + 1], c[DIM_MAX + 1];
        classify_utm(cases[i].q, cases[i].q ? strlen(cases[i].q) : 0, s, m, c);
        bool ok = CHECK_EQ_STR(s, cases[i].source);
        ok = CHECK_EQ_STR(m, cases[i].medium) && ok;
        ok = CHECK_EQ_STR(c, cases[i].campaign) && ok;
        if (!ok)
            test_note("utm row %zu: \"%s\"", i, cases[i].q ? cases[i].q : "(absent)");
    }

    /* Long and encoded: clamped after decoding, on a character boundary. */
    char q[2048];
    int n = snprintf(q, sizeof(q), "utm_source=");
    for (int i = 0; i < 200; i++)
        n += snprintf(q + n, sizeof(q) - (size_t)n, "%%E2%%82%%AC"); /* € */
    char s[DIM_MAX + 1], m[DIM_MAX + 1], c[DIM_MAX + 1];
    classify_utm(q, (size_t)n, s, m, c);
    CHECK_EQ_INT(strlen(s), 126); /* 42 euro signs; a 43rd would make 129 */

    /* Control characters before the text do not use up the room. */
    n = snprintf(q, sizeof(q), "utm_medium=");
    for (int i = 0; i < 300; i++)
        n += snprintf(q + n, sizeof(q) - (size_t)n, "%%01");
    n += snprintf(q + n, sizeof(q) - (size_t)n, "visible");
    classify_utm(q, (size_t)n, s, m, c);
    CHECK_EQ_STR(m, "visible");
}

/* An independent check that s is well-formed UTF-8 (RFC 3629). */
static bool valid_utf8(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char b = s[i];
        size_t len;
        unsigned cp;
        if (b < 0x80) {
            i++;
            continue;
        } else if ((b & 0xE0) == 0xC0) {
            len = 2;
            cp = b & 0x1F;
        } else if ((b & 0xF0) == 0xE0) {
            len = 3;
            cp = b & 0x0F;
        } else if ((b & 0xF8) == 0xF0) {
            len = 4;
            cp = b & 0x07;
        } else {
            return false;
        }
        if (i + len > n)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        static const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

static bool has_control(const char *s)
{
    for (; *s; s++) {
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return true;
    }
    return false;
}

void test_clamp_utf8(void)
{
    char out[DIM_MAX + 1];
    char in[512];

    CHECK_EQ_INT(clamp_utf8("", 0, out), 0);
    CHECK_EQ_STR(out, "");
    CHECK_EQ_INT(clamp_utf8(S("hello"), out), 5);
    CHECK_EQ_STR(out, "hello");

    /* ASCII past the cap: exactly DIM_MAX bytes. */
    memset(in, 'a', 300);
    CHECK_EQ_INT(clamp_utf8(in, 300, out), DIM_MAX);
    CHECK_EQ_INT(strlen(out), DIM_MAX);

    /* A two-byte character straddling byte 128 is dropped whole. */
    memset(in, 'a', 127);
    memcpy(in + 127, "\xc3\xa9zz", 4);
    CHECK_EQ_INT(clamp_utf8(in, 131, out), 127);
    /* A four-byte one ending exactly at 128 is kept. */
    memset(in, 'a', 124);
    memcpy(in + 124, "\xf0\x9f\x98\x80", 4);
    CHECK_EQ_INT(clamp_utf8(in, 128, out), 128);
    /* and one byte later it is not. */
    memset(in, 'a', 125);
    memcpy(in + 125, "\xf0\x9f\x98\x80", 4);
    CHECK_EQ_INT(clamp_utf8(in, 129, out), 125);

    /* Invalid bytes become U+FFFD, one per maximal ill-formed subpart. */
    CHECK_EQ_INT(clamp_utf8(S("a\xff"
                              "b"),
                            out),
                 5);
    CHECK_EQ_STR(out, "a\xef\xbf\xbd"
                      "b");
    CHECK_EQ_INT(clamp_utf8(S("\xc3"), out), 3); /* truncated at the end */
    CHECK_EQ_STR(out, "\xef\xbf\xbd");
    clamp_utf8(S("\xe2\x82"
                 "x"),
               out); /* truncated before an ASCII byte */
    CHECK_EQ_STR(out, "\xef\xbf\xbd"
                      "x");
    clamp_utf8(S("\xc0\xaf"), out); /* overlong '/' */
    CHECK_EQ_STR(out, "\xef\xbf\xbd\xef\xbf\xbd");
    clamp_utf8(S("\xed\xa0\x80"), out); /* a surrogate */
    CHECK_EQ_STR(out, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    clamp_utf8(S("\xf4\x90\x80\x80"), out); /* past U+10FFFF */
    CHECK(valid_utf8((const unsigned char *)out, strlen(out)));
    clamp_utf8(S("\xe2\x82\xac\xf0\x9f\x98\x80"), out); /* valid stays */
    CHECK_EQ_STR(out, "\xe2\x82\xac\xf0\x9f\x98\x80");

    /* A replacement that would pass the cap is not written. */
    memset(in, 'a', 126);
    in[126] = (char)0xff;
    CHECK_EQ_INT(clamp_utf8(in, 127, out), 126);

    /* Control characters are dropped, DEL too; tab and newline are controls. */
    CHECK_EQ_INT(clamp_utf8(S("a\tb\nc\x01"
                              "d\x7f"
                              "e\r"),
                            out),
                 5);
    CHECK_EQ_STR(out, "abcde");
    static const char nul[] = "a\0b";
    CHECK_EQ_INT(clamp_utf8(nul, 3, out), 2);

    /* Whatever comes in, what goes out is valid, short and free of controls. */
    unsigned seed = 12345;
    int bad = 0;
    for (int round = 0; round < 2000; round++) {
        size_t n = (size_t)(round % 400);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            in[i] = (char)(seed >> 16);
        }
        size_t len = clamp_utf8(in, n, out);
        if (len != strlen(out) || len > DIM_MAX || !valid_utf8((const unsigned char *)out, len) ||
            has_control(out))
            bad++;
    }
    CHECK_EQ_INT(bad, 0);
}

/* Client hints over the user agent: the brand list's browser (GREASE and
 * unknown brands skipped), the platform's OS, the mobile flag's device; a
 * bot stays what its user agent says, and what a hint does not know leaves
 * the user agent's answer. */
void test_classify_hints(void)
{
    struct classify *c;
    if (!CHECK_EQ_INT(classify_new(100, &c), ERR_OK))
        return;
    /* Chrome's reduced user agent says Windows and desktop whatever runs it. */
    static const char reduced[] = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
                                  "(KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36";
    static const char android[] = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, "
                                  "like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36";
    static const char instagram[] =
        "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Version/4.0 Chrome/124.0.0.0 Mobile Safari/537.36 Instagram 330.0.0.40.92 Android";
    static const char googlebot[] =
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
    static const struct {
        const char *ua, *ch_ua, *mobile, *platform;
        enum device device;
        const char *browser, *os;
        enum bot_kind bot;
    } cases[] = {
        /* Edge on macOS, GREASE first */
        {reduced, "\"Not A(Brand\";v=\"99\", \"Microsoft Edge\";v=\"124\", \"Chromium\";v=\"124\"",
         "?0", "\"macOS\"", DEV_DESKTOP, "Edge", "macOS", BOT_NONE},
        /* Chrome on Android, a phone */
        {android, "\"Chromium\";v=\"124\", \"Google Chrome\";v=\"124\", \"Not-A.Brand\";v=\"99\"",
         "?1", "\"Android\"", DEV_MOBILE, "Chrome", "Android", BOT_NONE},
        /* the same on a tablet: "?0" */
        {android, "\"Google Chrome\";v=\"124\"", "?0", "\"Android\"", DEV_TABLET, "Chrome",
         "Android", BOT_NONE},
        /* GREASE with ';' and '=' in its name, then Edge */
        {reduced, "\"Not;A=Brand\";v=\"99\", \"Microsoft Edge\";v=\"124\"", "?0", "\"Windows\"",
         DEV_DESKTOP, "Edge", "Windows", BOT_NONE},
        /* Opera on Linux; a parameter with a quoted comma */
        {reduced, "\"Opera\";v=\"110\";x=\"a, b\", \"Not:A-Brand\";v=\"8\"", "?0", "\"Linux\"",
         DEV_DESKTOP, "Opera", "Linux", BOT_NONE},
        /* Samsung Internet; ChromeOS */
        {reduced, "\"Samsung Internet\";v=\"25\"", NULL, "\"Chrome OS\"", DEV_DESKTOP,
         "Samsung Internet", "ChromeOS", BOT_NONE},
        /* GREASE alone, an unknown platform: the user agent's answer */
        {reduced, "\"Not/A)Brand\";v=\"8\", \"Brave\";v=\"124\"", "?0", "\"Unknown\"", DEV_DESKTOP,
         "Chrome", "Windows", BOT_NONE},
        /* Chromium alone keeps an in-app browser's name */
        {instagram, "\"Chromium\";v=\"124\", \"Android WebView\";v=\"124\"", "?1", "\"Android\"",
         DEV_MOBILE, "Instagram", "Android", BOT_NONE},
        /* garbage: nothing changes */
        {reduced, "Google Chrome, \"unterminated", "1", "Windows", DEV_DESKTOP, "Chrome", "Windows",
         BOT_NONE},
        /* a bot claiming to be a phone is a bot */
        {googlebot, "\"Google Chrome\";v=\"124\"", "?1", "\"Android\"", DEV_BOT, "Other", "Other",
         BOT_CRAWLER},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        struct ua_info u;
        classify_ua(c, cases[i].ua, strlen(cases[i].ua), &u);
        const char *a = cases[i].ch_ua, *m = cases[i].mobile, *p = cases[i].platform;
        classify_hints(a, a ? strlen(a) : 0, m, m ? strlen(m) : 0, p, p ? strlen(p) : 0, &u);
        if (!CHECK_EQ_INT(u.device, cases[i].device) | !CHECK_EQ_STR(u.browser, cases[i].browser) |
            !CHECK_EQ_STR(u.os, cases[i].os) | !CHECK_EQ_INT(u.bot, cases[i].bot))
            test_note("hints case %zu", i);
    }
    /* In a hurry, the hints name what the user agent was not asked. */
    struct ua_info u;
    static const char fresh[] = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like "
                                "Gecko) Chrome/125.0.0.0 Safari/537.36";
    CHECK(classify_ua_hurried(c, fresh, strlen(fresh), &u));
    classify_hints("\"Chromium\";v=\"125\"", 19, "?0", 2, "\"Linux\"", 7, &u);
    CHECK_EQ_STR(u.browser, "Chrome");
    CHECK_EQ_STR(u.os, "Linux");
    CHECK_EQ_INT(u.device, DEV_DESKTOP);
    classify_free(c);
}
