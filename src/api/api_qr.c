/* api_qr.c - a link's QR code: GET /api/links/CODE/qr?format=svg|png&scale=N
 * encodes the short URL (base-url + "/" + code) with libqrencode at error
 * correction level M and draws it with a quiet zone of four modules, N pixels
 * per module: as SVG (a white square and one path of dark runs, scaled by its
 * viewBox) or as a 1-bit greyscale PNG written by libpng into memory. Only the
 * link's owner or an admin gets it; anyone else gets the 404 of an unknown
 * code (owner.h). */
#include <ctype.h>
#include <errno.h>
#include <png.h>
#include <qrencode.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "links/codes.h"
#include "base/err.h"
#include "api/handlers.h"
#include "base/log.h"
#include "api/owner.h"
#include "links/links.h"
#include "store/store_links.h"
#include "base/banned.h"

#define QR_MARGIN 4 /* quiet zone, in modules (ISO/IEC 18004) */
#define QR_SCALE_DEFAULT 8
#define QR_SCALE_MAX 40 /* version 40 at 40: 7,400 pixels a side */

static bool dark(const QRcode *qr, int x, int y)
{
    return qr->data[(size_t)y * (size_t)qr->width + (size_t)x] & 1;
}

/* The SVG: user units are modules, so 'scale' only sets width and height. */
static void qr_svg(const QRcode *qr, int scale, struct buf *out)
{
    int side = qr->width + 2 * QR_MARGIN;
    buf_printf(out,
               "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" shape-rendering=\"crispEdges\">\n"
               "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n<path fill=\"#000\" d=\"",
               side * scale, side * scale, side, side, side, side);
    for (int y = 0; y < qr->width; y++) {
        for (int x = 0; x < qr->width;) {
            if (!dark(qr, x, y)) {
                x++;
                continue;
            }
            int run = 1;
            while (x + run < qr->width && dark(qr, x + run, y))
                run++;
            buf_printf(out, "M%d %dh%dv1h-%dz", x + QR_MARGIN, y + QR_MARGIN, run, run);
            x += run;
        }
    }
    buf_adds(out, "\"/>\n</svg>\n");
}

static void png_out(png_structp png, png_bytep data, size_t n)
{
    buf_add(png_get_io_ptr(png), data, n);
}

static void png_noflush(png_structp png) { (void)png; }

static void png_fail(png_structp png, png_const_charp msg)
{
    log_at(LOG_ERROR, "cannot write a QR code PNG: '%s'", msg);
    png_longjmp(png, 1);
}

static void png_warn(png_structp png, png_const_charp msg)
{
    (void)png;
    log_at(LOG_DEBUG, "libpng: '%s'", msg);
}

/* The libpng calls, apart from qr_png() so that nothing it keeps changes
 * after its setjmp. 'row' holds one row of pixels, 1 bit each, 1 = white. */
static void png_draw(png_structp png, png_infop info, const QRcode *qr, int scale,
                     unsigned char *row)
{
    int side = (qr->width + 2 * QR_MARGIN) * scale;
    size_t rowbytes = ((size_t)side + 7) / 8;
    png_set_IHDR(png, info, (png_uint_32)side, (png_uint_32)side, 1, PNG_COLOR_TYPE_GRAY,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
    png_write_info(png, info);
    for (int y = -QR_MARGIN; y < qr->width + QR_MARGIN; y++) {
        memset(row, 0xff, rowbytes);
        for (int x = 0; y >= 0 && y < qr->width && x < qr->width; x++) {
            if (!dark(qr, x, y))
                continue;
            for (int px = (x + QR_MARGIN) * scale; px < (x + QR_MARGIN + 1) * scale; px++)
                row[px / 8] &= (unsigned char)~(0x80u >> (px % 8));
        }
        for (int k = 0; k < scale; k++)
            png_write_row(png, row);
    }
    png_write_end(png, info);
}

static int qr_png(const QRcode *qr, int scale, struct buf *out)
{
    size_t side = (size_t)(qr->width + 2 * QR_MARGIN) * (size_t)scale;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, png_fail, png_warn);
    if (!png)
        return log_fail(ERR_NOMEM, "cannot start a QR code PNG");
    png_infop info = png_create_info_struct(png);
    unsigned char *row = malloc((side + 7) / 8);
    if (!info || !row) {
        png_destroy_write_struct(&png, &info);
        free(row);
        return log_fail(ERR_NOMEM, "cannot start a QR code PNG");
    }
    if (setjmp(png_jmpbuf(png))) { /* png_fail() has logged */
        png_destroy_write_struct(&png, &info);
        free(row);
        return ERR_NOMEM;
    }
    png_set_write_fn(png, out, png_out, png_noflush);
    png_draw(png, info, qr, scale, row);
    png_destroy_write_struct(&png, &info);
    free(row);
    return ERR_OK;
}

/* ?scale=1..40, whole digits only */
static bool parse_scale(struct slice s, int *scale)
{
    if (!s.n || s.n > 2)
        return false;
    int v = 0;
    for (size_t i = 0; i < s.n; i++) {
        if (!isdigit((unsigned char)s.p[i]))
            return false;
        v = v * 10 + (s.p[i] - '0');
    }
    if (v < 1 || v > QR_SCALE_MAX)
        return false;
    *scale = v;
    return true;
}

int handle_link_qr(struct request *r)
{
    struct app *app = r->app;
    struct slice v = SLICE_LIT("svg");
    http_query_param(r, "format", &v);
    bool png = slice_eq(v, "png");
    if (!png && !slice_eq(v, "svg"))
        return http_error(r, 400, "invalid_field", "format", "format must be svg or png");
    int scale = QR_SCALE_DEFAULT;
    if (http_query_param(r, "scale", &v) && !parse_scale(v, &scale))
        return http_error(r, 400, "invalid_field", "scale",
                          "scale must be a whole number of pixels per module from 1 to %d",
                          QR_SCALE_MAX);

    char code[CODE_MAX + 1];
    struct link l;
    int status = owner_link(r, code, &l);
    if (status)
        return status;
    struct buf url = BUF_INIT;
    link_short_url(&url, app->cfg.base_url, code, l.domain);
    link_release(&l);
    QRcode *qr = QRcode_encodeString(url.p, 0, QR_ECLEVEL_M, QR_MODE_8, 1);
    int err = errno;
    buf_release(&url);
    if (!qr) {
        log_at(LOG_ERROR, "cannot encode a QR code for '%s': %s", code, strerror(err));
        return http_error(r, 500, "internal", NULL, "cannot make the QR code");
    }
    buf_reset(&r->resp_body);
    int rc;
    if (png) {
        rc = qr_png(qr, scale, &r->resp_body);
    } else {
        qr_svg(qr, scale, &r->resp_body);
        rc = ERR_OK;
    }
    QRcode_free(qr);
    if (rc != ERR_OK)
        return http_error(r, 500, "internal", NULL, "cannot make the QR code");

    struct buf disp = BUF_INIT;
    buf_printf(&disp, "inline; filename=\"%s-qr.%s\"", code, png ? "png" : "svg");
    http_add_header(r, "Content-Disposition", disp.p, disp.len);
    buf_release(&disp);
    http_add_header(r, "Cache-Control", "private, no-cache", 17);
    http_add_header(r, "X-Content-Type-Options", "nosniff", 7);
    if (!png) /* opened on its own, the SVG is a document: it may run nothing */
        http_add_header(r, "Content-Security-Policy", "default-src 'none'", 18);
    r->content_type = png ? "image/png" : "image/svg+xml";
    return 200;
}
