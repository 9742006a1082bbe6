/* SPDX-License-Identifier: MIT */
/* Unit tests for mail/html.c: tags, entities, dropped elements, block
 * elements as line breaks, white space, robustness, the output cap. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "mail/html.h"

static void check(const char *in, const char *want)
{
	char out[1024];
	bool full = true;
	size_t k = html_to_text((const uint8_t *)in, strlen(in), out, sizeof(out), &full);
	out[k] = '\0';
	assert_string_equal(out, want);
	assert_false(full);
}

static void test_html_tags_removed(void **state)
{
	(void)state;
	check("<b>bold</b> and <i class=\"x\">it</i>", "bold and it");
	check("<a href='x>y'>link</a>", "link (x>y)");
	check("a < b and c > d", "a < b and c > d");
}

static void test_html_named_entities(void **state)
{
	(void)state;
	check("&lt;tag&gt; &amp; &quot;q&quot; &apos;", "<tag> & \"q\" '");
	check("caf&eacute; &euro;5 &copy; &mdash; &hellip;", "caf\xc3\xa9 \xe2\x82\xac" "5 \xc2\xa9 \xe2\x80\x94 \xe2\x80\xa6");
	check("&Omega;&alpha;&rarr;&hearts;", "\xce\xa9\xce\xb1\xe2\x86\x92\xe2\x99\xa5");
	check("&amp without semicolon", "& without semicolon");
	check("&unknown; & alone", "&unknown; & alone");
	assert_int_equal(html_entity_lookup("yuml", 4, NULL), 255);
	assert_int_equal(html_entity_lookup("Yuml", 4, NULL), 376);
	assert_int_equal(html_entity_lookup("nope", 4, NULL), -1);
}

/* HTML5's named references, beyond HTML 4's: including the two that
 * make two code points. */
static void test_html_html5_entities(void **state)
{
	(void)state;
	check("&check; &rightarrow; &NotEqualTilde; &half; &Tab;x", "\xe2\x9c\x93 \xe2\x86\x92 \xe2\x89\x82\xcc\xb8 \xc2\xbd x");
	check("&lbrace;&rbrace; &ast; &commat;", "{} * @");
	/* the text never outgrows the HTML (html.h): two code points of six
	 * bytes under the five bytes of &nLt; stay as written */
	check("a&nLt;b &nLt c", "a&nLt;b &nLt c");
	int32_t cp2;
	assert_int_equal(html_entity_lookup("NotEqualTilde", 13, &cp2), 0x2242);
	assert_int_equal(cp2, 0x338);
	assert_int_equal(html_entity_lookup("check", 5, &cp2), 0x2713);
	assert_int_equal(cp2, 0);
}

/* A link keeps its target after its text when the text does not show it;
 * an image keeps its alt text. */
static void test_html_links_and_alt(void **state)
{
	(void)state;
	check("See <a href=\"http://example.org/page\">the docs</a> now.",
	      "See the docs (http://example.org/page) now.");
	check("<a href=\"http://example.org/\">http://example.org</a> x", "http://example.org x");
	check("<a href=\"mailto:a@b.c\">a@b.c</a>", "a@b.c");
	check("<a href=\"#top\">top</a> <a href=\"javascript:go()\">go</a>", "top go");
	check("<A HREF=x.html>x.html </A>next", "x.html next");
	check("<a href=\"http://t.co/x\"><img src=a.png></a>after", "after");
	check("<a href='http://a?x=1&amp;y=2'>link</a>b", "link (http://a?x=1&y=2) b");
	check("<p><a href=\"http://x\">one</a><a href=\"http://y\">two</a></p>",
	      "one (http://x) two (http://y)");
	check("<a href=\"u\">unclosed", "unclosed (u)");
	check("<img alt=\"Company &amp; logo\" src=x>text <IMG ALT=chart>", "Company & logo text chart");
	check("<img src=x alt=\"\">empty alt", "empty alt");
	check("<a title=\"href=no\">no target</a>", "no target");
}

static void test_html_numeric_entities(void **state)
{
	(void)state;
	check("&#65;&#x42;&#X43;", "ABC");
	check("&#233;", "\xc3\xa9");
	check("&#x1F600;", "\xf0\x9f\x98\x80");
	check("&#150;", "\xe2\x80\x93");              /* windows-1252 C1 */
	check("&#0;&#xD800;&#99999999;", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
}

static void test_html_nbsp_is_space(void **state)
{
	(void)state;
	check("a&nbsp;&nbsp;b", "a b");
	check("a\xc2\xa0" "b", "a b");
}

static void test_html_script_style_head_dropped(void **state)
{
	(void)state;
	check("<html><head><title>T</title><meta x></head><body>Hi</body></html>", "Hi");
	check("x<script>if (a<b) alert('</p>')</script>y", "xy");
	check("x<STYLE type=text/css>p{}</STYLE >y", "xy");
	check("x<script>never closed", "x");
}

static void test_html_comments_dropped(void **state)
{
	(void)state;
	check("a<!-- <p>hidden</p> -->b", "ab");
	check("a<!DOCTYPE html>b", "ab");
	check("a<!-- unclosed comment", "a");
}

static void test_html_blocks_become_breaks(void **state)
{
	(void)state;
	check("<p>one</p><p>two</p>", "one\n\ntwo");
	check("<div>a</div><div>b</div>", "a\nb");
	check("a<br>b<br/><br>c", "a\nb\n\nc");
	check("<ul><li>x</li><li>y</li></ul>", "x\ny");
	check("<table><tr><td>1</td><td>2</td></tr><tr><td>3</td></tr></table>", "1 2\n3");
	check("<h1>T</h1>body<blockquote>q</blockquote>", "T\n\nbody\n\nq");
}

static void test_html_whitespace_collapsed(void **state)
{
	(void)state;
	check("  a \r\n\t b  ", "a b");
	check("<p>  </p>  <p> x </p>", "x");
	check("<pre>a\n  b</pre>c", "a\n  b\n\nc");
}

static void test_html_unclosed_tag(void **state)
{
	(void)state;
	check("text<a href=\"never", "text");
	check("text<b", "text");
	check("<", "<");
}

static void test_html_output_cap(void **state)
{
	(void)state;
	char out[8];
	bool full = false;
	/* "é" is two bytes: the cut may not split it. */
	size_t k = html_to_text((const uint8_t *)"abcdef&eacute;gh", 16, out, 7, &full);
	assert_true(full);
	assert_int_equal(k, 6);
	assert_memory_equal(out, "abcdef", 6);
}

/* A raw two-byte character starting with 0xC2 (not U+00A0) is written whole
 * or not at all: a cut between its bytes left a lone 0xC2 (invalid UTF-8). */
static void test_html_cap_never_splits_c2_char(void **state)
{
	(void)state;
	char out[4];
	bool full = false;
	size_t k = html_to_text((const uint8_t *)"c\xc2\xa9", 3, out, 2, &full);
	assert_true(full);
	assert_int_equal(k, 1);
	assert_memory_equal(out, "c", 1);
	k = html_to_text((const uint8_t *)"c\xc2\xa9", 3, out, 3, &full);
	assert_false(full);
	assert_int_equal(k, 3);
	assert_memory_equal(out, "c\xc2\xa9", 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_html_cap_never_splits_c2_char),
		cmocka_unit_test(test_html_tags_removed),
		cmocka_unit_test(test_html_named_entities),
		cmocka_unit_test(test_html_html5_entities),
		cmocka_unit_test(test_html_links_and_alt),
		cmocka_unit_test(test_html_numeric_entities),
		cmocka_unit_test(test_html_nbsp_is_space),
		cmocka_unit_test(test_html_script_style_head_dropped),
		cmocka_unit_test(test_html_comments_dropped),
		cmocka_unit_test(test_html_blocks_become_breaks),
		cmocka_unit_test(test_html_whitespace_collapsed),
		cmocka_unit_test(test_html_unclosed_tag),
		cmocka_unit_test(test_html_output_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
